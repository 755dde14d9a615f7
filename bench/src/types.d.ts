// autocannon 8 ships no types; the bench uses only the programmatic run(opts, cb) call.
declare module 'autocannon' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  function autocannon(opts: Record<string, unknown>, cb: (err: Error | null, result: any) => void): unknown;
  export default autocannon;
}
