// @tanstack/virtual-core's ES modules are written for bundlers, which replace
// process.env.NODE_ENV; with no build step the page defines it, as a bundler would.
globalThis.process = globalThis.process || { env: { NODE_ENV: "production" } };
