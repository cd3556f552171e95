// The official openai npm client, unchanged, against trainyard's gateway
// (docs/serving.md, "The gateway"). Run by tests/integration/test_gateway.py:
//   node openai_client.mjs BASE_URL KEY OTHER_KEY RATE_KEY
// BASE_URL ends in /v1; KEY may call the deployment "bot", OTHER_KEY is a
// key of another deployment, RATE_KEY one of "bot" allowed one request a
// minute. Prints one JSON line of what it saw; exits 1 on
// anything unexpected.
import OpenAI from 'openai';

const [base, key, otherKey, rateKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0 });
const out = { errors: {} };

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const chat = await client.chat.completions.create({
  model: 'bot',
  messages: [{ role: 'user', content: 'openai says hi' }],
  max_tokens: 100,
});
out.chat = chat.choices[0].message.content;

const stream = await client.chat.completions.create({
  model: 'bot',
  messages: [{ role: 'user', content: 'streamed by openai' }],
  max_tokens: 100,
  stream: true,
  stream_options: { include_usage: true },
});
out.stream = '';
for await (const chunk of stream) {
  for (const c of chunk.choices) out.stream += c.delta?.content ?? '';
  if (chunk.usage) out.stream_usage = chunk.usage;
}

async function errorClass(c, body) {
  try {
    await c.chat.completions.create(body);
  } catch (e) {
    for (const name of ['AuthenticationError', 'PermissionDeniedError', 'RateLimitError',
      'NotFoundError']) {
      if (e instanceof OpenAI[name]) return name;
    }
    return `other: ${e.constructor.name} ${e.status}`;
  }
  return 'no error';
}

const hello = { model: 'bot', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 };
out.errors.none = await errorClass(new OpenAI({ baseURL: base, apiKey: 'tysk_wrong', maxRetries: 0 }), hello);
out.errors.other = await errorClass(new OpenAI({ baseURL: base, apiKey: otherKey, maxRetries: 0 }), hello);
const limited = new OpenAI({ baseURL: base, apiKey: rateKey, maxRetries: 0 });
out.errors.first = await errorClass(limited, hello);
out.errors.rate = await errorClass(limited, hello);

console.log(JSON.stringify(out));
