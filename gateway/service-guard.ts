/**
 * Preloaded into every side service by `services.ts` (`node --import <this module> <script>`), so
 * that a service never outlives the gateway that started it: the gateway opens an IPC channel to
 * each service, and the operating system closes it when the gateway exits for any reason (a crash,
 * `SIGKILL`, the OOM killer). The channel's `disconnect` then sends the service `SIGTERM` (its own
 * handler, if any, closes it gracefully; otherwise it ends at once) and exits it after 3 s at the latest.
 *
 * The listener does not keep the service alive by itself (the channel is unref'd). A script started
 * without an IPC channel (by hand) is not affected.
 */
if (process.channel) {
  process.once('disconnect', () => {
    setTimeout(() => process.exit(1), 3000).unref()
    process.kill(process.pid, 'SIGTERM')
  })
  process.channel.unref()
}

export {}
