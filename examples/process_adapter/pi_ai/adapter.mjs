// pi-ai's own streamSimple as a streamfns-process/1 adapter: one call per process (docs/process-protocol.md).
// It adds nothing to what pi-ai does, so the harness judges pi-ai itself: a throw from pi-ai crashes
// the process (X1 reports it) instead of being turned into an error event here.
//
// Run:  npm install --prefix examples/process_adapter/pi_ai   (or any install, named by NODE_PATH)
//       streamfns conformance run --exec 'node examples/process_adapter/pi_ai/adapter.mjs' --api anthropic-messages
//       NODE_PATH=/tmp/piai/node_modules streamfns conformance run --exec 'node …/adapter.mjs' --api openai-completions
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const PACKAGE = "@mariozechner/pi-ai";

// Node's ESM resolver ignores NODE_PATH, so an install named there is found by hand.
async function loadPiAi() {
  for (const dir of (process.env.NODE_PATH ?? "").split(delimiter).filter(Boolean)) {
    const manifest = join(dir, PACKAGE, "package.json");
    if (!existsSync(manifest)) continue;
    const entry = JSON.parse(readFileSync(manifest, "utf8")).exports["."].import;
    return import(pathToFileURL(join(dir, PACKAGE, entry)).href);
  }
  return import(PACKAGE); // node_modules next to this file (npm install in this directory)
}

const { streamSimple } = await loadPiAi();
const write = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const controller = new AbortController();
process.on("SIGINT", () => controller.abort());

// Passed as they come: pi's own option names. timeoutMs is streamfns' idle timeout; pi hands it to the
// vendor SDK, whose timer stops once the response headers are in, so before the headers the two agree
// and after them pi has no bound. connect/progress/totalTimeoutMs have no pi equivalent: left out.
const PASSED = ["apiKey", "maxTokens", "temperature", "reasoning", "thinkingBudgets", "sessionId",
  "cacheRetention", "headers", "timeoutMs", "maxRetries", "maxRetryDelayMs"];

async function call(request) {
  const options = { signal: controller.signal };
  for (const name of PASSED) if (request.options?.[name] !== undefined) options[name] = request.options[name];
  if (request.aborted) controller.abort();
  const events = streamSimple(request.model, request.context, options);
  for await (const { partial, ...event } of events) { // partial is the live accumulator: the harness ignores it
    write(event);
    if (event.type === "done" || event.type === "error") break;
  }
  process.stdout.write("", () => process.exit(0)); // exit once stdout is flushed; exit closes pi's sockets
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
let started = false;
lines.on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.type === "abort") controller.abort();
  else if (message.type === "request" && !started) {
    started = true;
    call(message).catch((error) => { process.stderr.write(`pi-ai threw: ${error?.stack ?? error}\n`); process.exit(1); });
  }
});
lines.on("close", () => { if (!started) process.exit(0); }); // the harness let an idle process go
write({ type: "ready" });
