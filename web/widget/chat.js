// chat.js - the public chat page of a deployment (web/widget/README.md):
// greeting and suggested questions from /chat/{name}/config, answers
// streamed from the gateway with the widget's public key, and a handoff to
// a person when the visitor asks for one. Visitor and server text only ever
// goes in as text (textContent), never as HTML.
'use strict';

(function () {
  const TEXT = {
    'zh-CN': {
      send: '发送', placeholder: '请输入您的问题…', title: '在线咨询',
      busy: '您发送得太快了，请稍后再试。',
      failed: '抱歉，服务暂时不可用，请稍后再试。',
      closed: '抱歉，在线咨询暂未开放。',
      handoff: '已为您转接人工客服，工作人员会尽快与您联系。',
    },
    en: {
      send: 'Send', placeholder: 'Type your question…', title: 'Chat with us',
      busy: 'You are sending messages too fast. Please try again in a moment.',
      failed: 'Sorry, the service is unavailable right now. Please try again later.',
      closed: 'Sorry, this chat is not available.',
      handoff: 'Thanks. A person from our team will follow up with you soon.',
    },
  };
  const lang = /^en\b/i.test(navigator.language || '') ? 'en' : 'zh-CN';
  const t = TEXT[lang];
  const name = decodeURIComponent(location.pathname.split('/')[2] || '');
  const base = '/chat/' + encodeURIComponent(name);
  const $ = (id) => document.getElementById(id);
  const history = []; // {role, content}: what the model and a person see
  let config = null;
  let busy = false;

  document.documentElement.lang = lang;

  function add(kind, text) {
    const li = document.createElement('li');
    const b = document.createElement('div');
    li.className = kind;
    b.className = 'bubble';
    b.textContent = text;
    li.appendChild(b);
    $('log').appendChild(li);
    $('log').scrollTop = $('log').scrollHeight;
    return b;
  }

  function wantsPerson(text) {
    if (!config || !config.handoff) return false;
    const low = text.toLowerCase();
    return (config.handoff_keywords || []).some((k) => low.includes(String(k).toLowerCase()));
  }

  async function handoff() {
    const r = await fetch(base + '/handoff', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: history.slice(-40), lang }),
    });
    if (r.status === 429) throw Object.assign(new Error('busy'), { status: 429 });
    if (!r.ok) throw new Error('handoff ' + r.status);
    add('notice', t.handoff);
  }

  // Reads the gateway's server-sent events into bubble as they come.
  async function stream(bubble) {
    const r = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + config.key },
      body: JSON.stringify({ model: name, stream: true, messages: history.slice(-20) }),
    });
    if (!r.ok || !r.body) throw Object.assign(new Error('gateway ' + r.status), { status: r.status });
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let answer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of ev.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') continue;
          let chunk;
          try { chunk = JSON.parse(data); } catch (_) { continue; }
          if (chunk.error) throw new Error('stream error');
          const piece = chunk.choices && chunk.choices[0] && chunk.choices[0].delta &&
            chunk.choices[0].delta.content;
          if (piece) {
            answer += piece;
            bubble.textContent = answer;
            $('log').scrollTop = $('log').scrollHeight;
          }
        }
      }
    }
    history.push({ role: 'assistant', content: answer });
  }

  async function ask(text) {
    text = text.trim();
    if (!text || busy || !config) return;
    busy = true;
    $('send').disabled = true;
    add('user', text);
    history.push({ role: 'user', content: text });
    let bubble = null;
    try {
      if (wantsPerson(text)) {
        await handoff();
      } else {
        bubble = add('bot', '…');
        await stream(bubble);
      }
    } catch (e) {
      if (bubble && bubble.parentNode) bubble.parentNode.remove();
      add('error', e.status === 429 ? t.busy : t.failed);
    } finally {
      busy = false;
      $('send').disabled = false;
    }
  }

  async function start() {
    $('send').textContent = t.send;
    $('input').placeholder = t.placeholder;
    $('input').setAttribute('aria-label', t.placeholder);
    $('title').textContent = t.title;
    try {
      const r = await fetch(base + '/config');
      if (!r.ok) throw new Error('config ' + r.status);
      config = await r.json();
    } catch (_) {
      add('error', t.closed);
      $('send').disabled = true;
      return;
    }
    if (config.title) $('title').textContent = config.title;
    document.title = $('title').textContent;
    const g = config.greeting || {};
    if (g[lang]) add('bot', g[lang]);
    for (const q of config.suggestions || []) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = q;
      b.addEventListener('click', () => ask(q));
      $('suggestions').appendChild(b);
    }
  }

  $('form').addEventListener('submit', (e) => {
    e.preventDefault();
    const v = $('input').value;
    $('input').value = '';
    ask(v);
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('form').requestSubmit();
    }
  });
  start();
})();
