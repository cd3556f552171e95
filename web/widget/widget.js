// widget.js - what a company puts on its own site to offer the chat:
//   <script src="https://trainyard.example/chat/support-bot/widget.js" defer></script>
// It adds a floating button that opens the deployment's chat page
// (/chat/{name}) in an iframe. The page itself refuses to be framed by any
// origin but the widget's allowed_origins (its Content-Security-Policy).
(function () {
  'use strict';
  var script = document.currentScript;
  if (!script || !script.src) return;
  var page = script.src.replace(/\/widget\.js(\?.*)?$/, '');
  var zh = !/^en\b/i.test(navigator.language || '');
  var open = false;
  var frame = null;
  var button = document.createElement('button');

  button.type = 'button';
  button.textContent = zh ? '在线咨询' : 'Chat';
  button.setAttribute('aria-label', zh ? '打开在线咨询' : 'Open the chat');
  button.setAttribute('data-trainyard-widget', 'button');
  var bs = button.style;
  bs.position = 'fixed'; bs.right = '20px'; bs.bottom = '20px'; bs.zIndex = '2147483646';
  bs.padding = '12px 18px'; bs.border = '0'; bs.borderRadius = '24px';
  bs.background = '#1f6feb'; bs.color = '#fff'; bs.fontSize = '15px'; bs.cursor = 'pointer';
  bs.boxShadow = '0 4px 14px rgba(0,0,0,.25)';

  function place() {
    var small = window.innerWidth < 600;
    var fs = frame.style;
    fs.position = 'fixed'; fs.zIndex = '2147483647'; fs.border = '0'; fs.background = '#fff';
    fs.boxShadow = '0 8px 30px rgba(0,0,0,.3)';
    if (small) {
      fs.left = '0'; fs.top = '0'; fs.width = '100%'; fs.height = 'calc(100% - 70px)';
      fs.borderRadius = '0';
    } else {
      fs.right = '20px'; fs.bottom = '80px'; fs.width = '380px'; fs.height = '560px';
      fs.borderRadius = '12px';
    }
  }

  button.addEventListener('click', function () {
    if (!frame) {
      frame = document.createElement('iframe');
      frame.src = page;
      frame.title = zh ? '在线咨询' : 'Chat';
      frame.setAttribute('data-trainyard-widget', 'frame');
      place();
      window.addEventListener('resize', place);
      document.body.appendChild(frame);
    }
    open = !open;
    frame.style.display = open ? 'block' : 'none';
    button.textContent = open ? (zh ? '关闭' : 'Close') : (zh ? '在线咨询' : 'Chat');
  });
  document.body.appendChild(button);
})();
