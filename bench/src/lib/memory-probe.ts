/**
 * For bench children: answers an IPC {type:'memory'} with the process's memory after a full garbage collection
 * (when started with --expose-gc), so a parent can measure what live objects cost, not when GC last ran.
 */
export function installMemoryProbe(): void {
  process.on('message', (m: { type?: string }) => {
    if (m?.type !== 'memory') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const u = process.memoryUsage();
    process.send?.({
      type: 'memory',
      gc: Boolean(gc),
      rss: u.rss,
      heapUsed: u.heapUsed,
      external: u.external,
      arrayBuffers: u.arrayBuffers,
    });
  });
}
