export * from './gateway.js';
export * from './data-source.js';
export * from './stream.js';
export * from './supergraph.js';
