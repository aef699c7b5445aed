// Integer replies above 2^53 (docs/clients.md, "Other Redis clients in JavaScript"): each
// Node.js library's INCR on its own tag, which hands out 2^53 + 1 first, with its default
// decoding and with the option it offers to keep the value exact. Prints one JSON object
// of case -> the value as text, for check.py.
//
// Usage: node big_ids.mjs PORT
// The tags are named big-CASE (check.py creates them at 9007199254740993).
import { createClient as createClient4 } from 'redis-v4';
import { createClient, RESP_TYPES } from 'redis';
import Redis from 'ioredis';

const port = Number(process.argv[2]);
const url = `redis://127.0.0.1:${port}`;
const values = {};

// node-redis 4 decodes every integer reply with Number and has no option to change it.
const v4 = createClient4({ url });
await v4.connect();
values['node-redis-4'] = String(await v4.incr('big-node-redis-4'));
await v4.quit();

// node-redis 5 and later: a type mapping per client (or per command). A mapping to BigInt
// still goes through a Number first (the value comes back rounded), one to String does not.
const client = createClient({ url });
await client.connect();
values['node-redis'] = String(await client.incr('big-node-redis'));
values['node-redis-bigint'] = String(
  await client.withTypeMapping({ [RESP_TYPES.NUMBER]: BigInt }).incr('big-node-redis-bigint'));
values['node-redis-string'] =
  await client.withTypeMapping({ [RESP_TYPES.NUMBER]: String }).incr('big-node-redis-string');
await client.quit();

// ioredis: stringNumbers answers every integer reply as a string.
for (const [name, options] of [['ioredis', {}], ['ioredis-string', { stringNumbers: true }]]) {
  const io = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, ...options });
  values[name] = String(await io.incr(`big-${name}`));
  await io.quit();
}
console.log(JSON.stringify(values));
