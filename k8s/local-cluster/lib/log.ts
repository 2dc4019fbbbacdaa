/**
 * One-line JSON logs on stderr for the local cluster's daemons (kubelet, gateway); the launcher
 * sends stderr to a log file per daemon, so a failing test can point at it.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A logger tagging every line with `component`; Error values are logged by their message. Never throws. */
export function makeLogger(component: string): Logger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>): void => {
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields ?? {})) extra[k] = v instanceof Error ? v.message : v;
    process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), level, component, msg, ...extra })}\n`);
  };
  return {
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}
