// oidc-provider keeps its per-instance state behind this reader; identity wraps one grant handler through it
// (see provider.ts). Typed as loosely as it is used.
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  const instance: (provider: unknown) => unknown;
  export default instance;
}
