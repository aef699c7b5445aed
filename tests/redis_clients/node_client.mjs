// One Node.js Redis client library against idforge: the forms an application uses for
// an increment, then what idforge refuses. Prints one JSON object for check.py.
//
// Usage: node node_client.mjs LIBRARY PORT STRIPED_PORT TAG
//   LIBRARY: node-redis-4 (npm redis@4), node-redis (the current major, RESP3 by
//   default) or ioredis
import { createClient as createClient4 } from 'redis-v4';
import { createClient } from 'redis';
import Redis from 'ioredis';

const [library, port, stripedPort, tag] = process.argv.slice(2);

async function errorOf(call) {
  try {
    await call();
  } catch (e) {
    return e.message;
  }
  return null;
}

// The same calls on each library; `api` says how each one spells them.
async function run(api) {
  const results = {};
  results.incr = await api.incr(tag);
  results.incr_by_5 = await api.incrBy(tag, 5);
  results.transaction = await api.multi([['incr'], ['incrBy', 3], ['incr']]);
  results.pipeline = await api.pipeline([['incr'], ['incrBy', 2]]);
  const errors = {
    incr_by_0: await errorOf(() => api.incrBy(tag, 0)),
    decr: await errorOf(() => api.decr(tag)),
    striped_incr_by_5: await errorOf(() => api.stripedIncrBy(tag, 5)),
  };
  results.after = await api.incr(tag);
  return { results, errors };
}

function nodeRedis(make) {
  const url = (p) => `redis://127.0.0.1:${p}`;
  const client = make({ url: url(port) });
  const striped = make({ url: url(stripedPort) });
  for (const c of [client, striped]) c.on('error', (e) => console.error(`${library}: ${e.message}`));
  // node-redis queues calls made in the same tick and writes them together.
  const batch = (chain, calls) => {
    for (const [name, ...args] of calls) chain = chain[name](tag, ...args);
    return chain;
  };
  return {
    connect: () => Promise.all([client.connect(), striped.connect()]),
    incr: (t) => client.incr(t),
    incrBy: (t, n) => client.incrBy(t, n),
    decr: (t) => client.decr(t),
    stripedIncrBy: (t, n) => striped.incrBy(t, n),
    multi: (calls) => batch(client.multi(), calls).exec(),
    // A batch without MULTI ("pipeline" in node-redis' words).
    pipeline: (calls) => batch(client.multi(), calls).execAsPipeline(),
    close: () => Promise.all([client.quit(), striped.quit()]),
  };
}

function ioredis() {
  const options = { host: '127.0.0.1', maxRetriesPerRequest: 0, lazyConnect: true };
  const client = new Redis({ ...options, port: Number(port) });
  const striped = new Redis({ ...options, port: Number(stripedPort) });
  const batch = (chain, calls) => {
    for (const [name, ...args] of calls) chain = chain[name.toLowerCase()](tag, ...args);
    return chain;
  };
  // ioredis answers a batch as [error, value] pairs.
  const values = (pairs) =>
    pairs.map(([error, value]) => {
      if (error) throw error;
      return value;
    });
  return {
    connect: () => Promise.all([client.connect(), striped.connect()]),
    incr: (t) => client.incr(t),
    incrBy: (t, n) => client.incrby(t, n),
    decr: (t) => client.decr(t),
    stripedIncrBy: (t, n) => striped.incrby(t, n),
    multi: async (calls) => values(await batch(client.multi(), calls).exec()),
    pipeline: async (calls) => values(await batch(client.pipeline(), calls).exec()),
    close: () => Promise.all([client.quit(), striped.quit()]),
  };
}

const makers = {
  'node-redis-4': () => nodeRedis(createClient4),
  'node-redis': () => nodeRedis(createClient),
  ioredis,
};
if (!makers[library]) {
  console.error(`node_client.mjs: unknown library ${library}`);
  process.exit(2);
}
const api = makers[library]();
await api.connect();
const outcome = await run(api);
await api.close();
console.log(JSON.stringify(outcome));
