// idforge-client: the JavaScript client of idforge (docs/clients.md). ESM, no
// dependency; loads in Node.js 18+ and in browsers (http:// servers only there).
export { Client } from "./client.js";
export { IdforgeError, IdforgeUnavailable } from "./errors.js";
export { parse, formatParsed, LAYOUT_PRESETS } from "./parse.js";
