// An Anthropic Messages (`anthropic-messages`) streaming adapter speaking the streamfns process protocol
// (docs/process-protocol.md): one call per process, its request as one JSON line on stdin, pi's events
// as JSON lines on stdout. Node 20, no dependencies; nothing is ever written to stderr.
//
//   streamfns conformance run --exec 'node examples/process_adapter/node/anthropic_adapter.mjs' --api anthropic-messages
//
// Promises: one `start` first and one terminal (`done` or `error`) last; a failure keeps the partial content
// and usage and carries an `errorInfo`; tool-call arguments are strictly parsed at the block's end; success
// is never inferred from end-of-file; retries happen only before any content; the key never reaches stdout.
import http from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';

const RETRYABLE = new Set(['rate_limit', 'overloaded', 'server', 'network', 'timeout', 'truncated']);
// Anthropic's error types: HTTP error bodies and `event: error` frames share the shape {error: {type, message}}.
const ERROR_TYPES = {
  invalid_request_error: 'invalid_request', authentication_error: 'auth', permission_error: 'auth', billing_error: 'auth',
  not_found_error: 'not_found', request_too_large: 'context_overflow', rate_limit_error: 'rate_limit',
  api_error: 'server', overloaded_error: 'overloaded', timeout_error: 'timeout',
};
const STOPS = { end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', tool_use: 'toolUse', max_tokens: 'length',
  model_context_window_exceeded: 'length' };
const STOP_ERRORS = { refusal: ['refusal', 'The model refused to complete the request'],
  sensitive: ['content_filter', 'Anthropic stopped the response: sensitive content'] };
// The deltas that carry a piece of a block: the kind of block they belong to, and the member holding the piece.
const PIECES = { text_delta: ['text', 'text'], thinking_delta: ['thinking', 'thinking'],
  input_json_delta: ['toolCall', 'partial_json'] };
const BUDGETS = { minimal: 1024, low: 2048, medium: 8192, high: 16384 }; // thinking tokens per reasoning level
const MAX_ERROR_TEXT = 64 * 1024; // how much of an error body is read

class Failure extends Error {
  constructor(kind, message, info = {}) { super(message); this.kind = kind; this.info = info; }
}
const protocol = (text) => new Failure('protocol', `Anthropic ${text}`);
const str = (value) => (typeof value === 'string' ? value : '');
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
const quote = (text) => text.replace(/\s+/g, ' ').trim().slice(0, 300);
const eventName = (kind, phase) => `${kind === 'toolCall' ? 'toolcall' : kind}_${phase}`;

// ------------------------------------------------------------------------ the call and its one end

const call = new AbortController(); // fires once the terminal is written: stops the request, timers, sleeps
let started = false, ended = false, stdinClosed = false, abortRequested = false;
let secrets = []; // the key and credential header values, in the spellings an echo may use
let message = null, outputStarted = false, progressTimer = null;
let blocks = new Map(), stop = null, stopError = null; // per attempt; blocks: Anthropic's index → our state

// Redacting each serialized line is fail-closed: no field (errorMessage, code, ids, text) can carry the key.
const redact = (text) => secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
const write = (event) => process.stdout.write(redact(JSON.stringify(event)) + '\n');
const exit = () => process.stdout.write('', () => process.exit(0));

function end(event) {
  if (ended) return;
  ended = true;
  write(event);
  call.abort(); // the attempt ends: its request and connection are destroyed, its timers cleared
  if (stdinClosed) exit();
}

function fail(failure) { // the open blocks stay open: no invented ends
  if (ended || !message) return;
  const { kind, info: { status, code, retryAfterS } } = failure;
  message.stopReason = kind === 'aborted' ? 'aborted' : 'error';
  message.errorMessage = failure.message || 'unknown error';
  message.errorInfo = { kind, retryable: RETRYABLE.has(kind), outputStarted, ...(status && { status }),
    ...(code && { code }), ...(retryAfterS !== undefined && { retryAfterS }) };
  end({ type: 'error', reason: message.stopReason, error: message });
}

function abortCall() {
  if (started) fail(new Failure('aborted', 'Request was aborted'));
  else abortRequested = true; // before the request: it ends aborted, nothing sent
}

function newMessage(model) {
  const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  return { role: 'assistant', content: [], api: model.api ?? 'anthropic-messages', provider: model.provider ?? 'anthropic',
    model: model.id ?? '', usage: { ...zero, totalTokens: 0, cost: { ...zero, total: 0 } }, stopReason: 'pending',
    timestamp: Date.now() };
}

// -------------------------------------------------------------------------------------- the request

const toolId = (id) => str(id).replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64); // what Anthropic accepts, deterministic
const image = (b) => ({ type: 'image', source: { type: 'base64', media_type: b.mimeType, data: b.data } });

function buildBody(model, context, options) {
  const system = str(context.systemPrompt).trim() ? [context.systemPrompt] : [];
  const messages = [], vision = (model.input ?? []).includes('image');
  const part = (b) => (b.type === 'image' ? (vision ? image(b) : null) : str(b.text).trim() ? { type: 'text', text: b.text } : null);
  // Adjacent user-side content forms one user turn, tool results first: the API wants them right after
  // the assistant turn that called the tools.
  function user(content, results = false) {
    const last = messages.at(-1);
    if (last?.role !== 'user') return messages.push({ role: 'user', content });
    last.content.splice(results ? last.content.filter((b) => b.type === 'tool_result').length : Infinity, 0, ...content);
  }
  for (const m of context.messages ?? []) {
    const items = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content ?? [];
    if (m.role === 'system') { // streamfns' system messages: leading ones join the prompt, later ones are updates
      const text = items.map((b) => str(b.text)).join('\n');
      if (text.trim()) messages.length ? user([{ type: 'text', text: `<system_update>${text}</system_update>` }]) : system.push(text);
    } else if (m.role === 'user') {
      const content = items.map(part).filter(Boolean);
      if (content.length) user(content);
    } else if (m.role === 'assistant' && m.stopReason !== 'error' && m.stopReason !== 'aborted') { // failed turns are not replayed
      const content = [];
      for (const b of items) {
        if (b.type === 'text' && str(b.text).trim()) content.push({ type: 'text', text: b.text });
        else if (b.type === 'thinking' && b.thinkingSignature) {
          content.push(b.redacted ? { type: 'redacted_thinking', data: b.thinkingSignature }
            : { type: 'thinking', thinking: b.thinking, signature: b.thinkingSignature });
        } else if (b.type === 'thinking' && !b.redacted && str(b.thinking).trim()) {
          content.push({ type: 'text', text: b.thinking }); // unsigned reasoning would be refused as thinking
        } else if (b.type === 'toolCall') content.push({ type: 'tool_use', id: toolId(b.id), name: b.name, input: b.arguments ?? {} });
      }
      if (content.length) messages.push({ role: 'assistant', content });
    } else if (m.role === 'toolResult') {
      const texts = items.filter((b) => b.type === 'text').map((b) => str(b.text));
      const images = vision ? items.filter((b) => b.type === 'image').map(image) : [];
      const content = images.length ? [...texts.filter((t) => t.trim()).map((text) => ({ type: 'text', text })), ...images] : texts.join('\n');
      user([{ type: 'tool_result', tool_use_id: toolId(m.toolCallId), content, is_error: Boolean(m.isError) }], true);
    }
  }
  const body = { model: model.id, max_tokens: options.maxTokens || model.maxTokens || 4096, stream: true };
  if (system.length) body.system = [{ type: 'text', text: system.join('\n\n') }];
  body.messages = messages;
  if (context.tools?.length) {
    body.tools = context.tools.map(({ name, description, parameters = {} }) => {
      const { type, properties, required, ...rest } = parameters; // the rest ($defs …) too: $refs must resolve
      return { name, ...(description && { description }),
        input_schema: { type: 'object', properties: properties ?? {}, required: required ?? [], ...rest } };
    });
  }
  const level = options.reasoning;
  if (model.reasoning && level && level !== 'off') { // the budget fits under the output cap, 1024 tokens left to answer
    const budget = options.thinkingBudgets?.[level] ?? BUDGETS[level] ?? BUDGETS.high, cap = model.maxTokens || body.max_tokens + budget;
    body.max_tokens = options.maxTokens ? Math.min(options.maxTokens + budget, cap) : cap;
    body.thinking = { type: 'enabled', budget_tokens: Math.max(0, Math.min(budget, body.max_tokens - 1024)) };
  } else {
    if (model.reasoning) body.thinking = { type: 'disabled' };
    if (options.temperature !== undefined) body.temperature = options.temperature; // refused while thinking
  }
  return body;
}

// -------------------------------------------------------------------------------- the stream's events

function emit(type, index, fields) {
  outputStarted = true;
  progressTimer?.refresh(); // only content restarts the progress bound: a ping never does
  write({ type, contentIndex: index, ...fields });
}

function piece(state, text) {
  if (!text) return;
  if (state.kind === 'toolCall') state.json += text;
  else state.block[state.kind] += text;
  emit(eventName(state.kind, 'delta'), state.index, { delta: text });
}

function usage(u) { // only the counts present overwrite: message_delta repeats some, and proxies leave some out
  const t = message.usage, fields = { input: 'input_tokens', output: 'output_tokens',
    cacheRead: 'cache_read_input_tokens', cacheWrite: 'cache_creation_input_tokens' };
  for (const [key, field] of Object.entries(fields)) {
    if (Number.isFinite(u?.[field]) && u[field] >= 0) t[key] = Math.min(Math.floor(u[field]), Number.MAX_SAFE_INTEGER);
  }
  t.totalTokens = t.input + t.output + t.cacheRead + t.cacheWrite;
}

function blockStart(ev) {
  const cb = ev.content_block;
  if (!Number.isInteger(ev.index) || !isObject(cb)) throw protocol('sent a content_block_start without an index or a block');
  if (blocks.has(ev.index)) throw protocol(`started content block ${ev.index} twice`);
  // Server-side tool blocks (web search, code execution …) run at Anthropic: they take no content index.
  const state = { index: message.content.length, kind: 'skip', open: true, json: '', initial: null };
  blocks.set(ev.index, state);
  if (cb.type === 'text') Object.assign(state, { kind: 'text', block: { type: 'text', text: '' } });
  else if (cb.type === 'thinking' || cb.type === 'redacted_thinking') {
    const redacted = cb.type === 'redacted_thinking', signature = str(redacted ? cb.data : cb.signature);
    state.kind = 'thinking';
    state.block = { type: 'thinking', thinking: '', ...(signature && { thinkingSignature: signature }), ...(redacted && { redacted }) };
  } else if (cb.type === 'tool_use') {
    state.kind = 'toolCall';
    state.block = { type: 'toolCall', id: str(cb.id), name: str(cb.name), arguments: {} };
    if (isObject(cb.input) && Object.keys(cb.input).length) state.initial = cb.input; // arguments that came whole
  } else return;
  message.content.push(state.block);
  emit(eventName(state.kind, 'start'), state.index);
  if (state.kind !== 'toolCall') piece(state, cb.type === 'redacted_thinking' ? '[Reasoning redacted]' : str(cb[state.kind]));
}

function placed(index) {
  const state = blocks.get(index);
  if (!state) throw protocol(`sent an event for content block ${JSON.stringify(index)}, which never started`);
  return state;
}

function blockDelta(ev) {
  const state = placed(ev.index), delta = isObject(ev.delta) ? ev.delta : {}, target = PIECES[delta.type];
  if (state.kind === 'skip' || (!target && delta.type !== 'signature_delta')) return; // citations change no text
  if ((target ? target[0] : 'thinking') !== state.kind || !state.open) {
    throw protocol(`sent a ${delta.type} for block ${ev.index}, which is ${state.open ? `a ${state.kind} block` : 'closed'}`);
  }
  if (target) piece(state, str(delta[target[1]]));
  else state.block.thinkingSignature = str(state.block.thinkingSignature) + str(delta.signature);
}

function blockEnd(state) {
  if (!state.open || state.kind === 'skip') return;
  state.open = false;
  if (state.kind !== 'toolCall') return emit(eventName(state.kind, 'end'), state.index, { content: state.block[state.kind] });
  if (!state.json && state.initial) piece(state, JSON.stringify(state.initial)); // so the deltas always rebuild them
  try {
    state.block.arguments = state.json ? JSON.parse(state.json) : {}; // strict: a cut object never becomes executable
  } catch (error) {
    state.block.arguments = {};
    state.error = error; // settled in finish(): a `length` stop keeps the call, anything else fails
    return;
  }
  if (!isObject(state.block.arguments)) throw protocol(`sent tool call ${state.block.name} with arguments that are not an object`);
  emit('toolcall_end', state.index, { toolCall: state.block });
}

function finish() { // message_stop: the only way to `done`
  if (!stop) throw protocol('ended the response without a stop reason');
  if (stopError) throw stopError;
  for (const state of blocks.values()) blockEnd(state);
  const calls = [...blocks.values()].filter((s) => s.kind === 'toolCall'), broken = calls.find((s) => s.error);
  if (broken && stop !== 'length') {
    const kind = /end of JSON|Unterminated/i.test(broken.error.message) ? 'truncated' : 'protocol';
    throw new Failure(kind, `tool call ${broken.block.name} ended with invalid arguments: ${broken.error.message}`);
  }
  for (const s of calls) if (s.error) emit('toolcall_end', s.index, { toolCall: s.block }); // kept, but not executable
  const complete = calls.some((s) => !s.error);
  if (stop === 'toolUse' && !complete) throw protocol('reported tool use but sent no complete tool call');
  message.stopReason = stop === 'stop' && complete ? 'toolUse' : stop;
  end({ type: 'done', reason: message.stopReason, message });
}

const statusKind = (s) => (s === 401 || s === 403 ? 'auth' : s === 404 ? 'not_found' : s === 413 ? 'context_overflow'
  : s === 429 ? 'rate_limit' : s === 529 ? 'overloaded' : s === 408 || s === 504 ? 'timeout' : s >= 500 ? 'server' : 'invalid_request');

function vendorFailure(body, status, retryAfterS) { // the status's kind, refined by the vendor's error type
  const code = str(body.error?.type) || undefined, text = str(body.error?.message);
  const kind = /prompt is too long/i.test(text) ? 'context_overflow' : ERROR_TYPES[code] ?? (status ? statusKind(status) : 'server');
  const where = status ? `answered HTTP ${status}` : 'sent an error mid-stream';
  return new Failure(kind, `Anthropic ${where}${code ? ` (${code})` : ''}: ${text.slice(0, MAX_ERROR_TEXT) || 'no message'}`,
    { status, code, retryAfterS });
}

function onEvent(name, data, cut) {
  if (name === 'ping') return;
  let ev;
  try {
    ev = JSON.parse(data);
  } catch { // a body that ends inside its last event was cut short; anywhere else the JSON is malformed
    throw cut ? new Failure('truncated', `the stream ended inside an event: ${quote(data)}`) : protocol(`sent an event that is not JSON: ${quote(data)}`);
  }
  if (!isObject(ev)) throw protocol(`sent an event that is not a JSON object: ${quote(data)}`);
  switch (ev.type ?? name) {
    case 'message_start':
      if (outputStarted) throw protocol('sent a second message_start after content had started');
      if (typeof ev.message?.id === 'string') message.responseId = ev.message.id;
      if (typeof ev.message?.model === 'string') message.responseModel = ev.message.model;
      return usage(ev.message?.usage);
    case 'content_block_start': return blockStart(ev);
    case 'content_block_delta': return blockDelta(ev);
    case 'content_block_stop': return blockEnd(placed(ev.index));
    case 'message_delta': {
      usage(ev.usage);
      const raw = ev.delta?.stop_reason;
      if (typeof raw !== 'string') return;
      message.rawStopReason = raw;
      stop = STOPS[raw] ?? 'error'; // a refusal or an unknown reason fails at message_stop, after the last usage
      const [kind, text] = STOP_ERRORS[raw] ?? ['protocol', `Anthropic sent an unknown stop reason ${raw}`];
      stopError = stop === 'error' ? new Failure(kind, str(ev.delta?.stop_details?.explanation) || text, { code: raw }) : null;
      return;
    }
    case 'message_stop': return finish();
    case 'error': throw vendorFailure(ev);
  }
}

// Server-sent events, fed as they come: a read may end anywhere, also between the CR and the LF of a line end.
function sseParser(dispatch) {
  let buf = '', from = 0, waiting = [], name = '', data = null;
  function line(text, cut = false) {
    if (text === '') {
      if (data !== null) dispatch(name || 'message', data, cut);
      name = '';
      data = null;
    } else if (text[0] !== ':') { // a comment (a keep-alive) carries nothing
      const colon = text.indexOf(':'), field = colon < 0 ? text : text.slice(0, colon);
      const value = colon < 0 ? '' : text.slice(colon + (text[colon + 1] === ' ' ? 2 : 1));
      if (field === 'data') data = data === null ? value : `${data}\n${value}`;
      else if (field === 'event') name = value;
    }
  }
  return (text, eof) => {
    waiting.push(text);
    if (!eof && !/[\r\n]/.test(text)) return; // joining only at a line end keeps a long line linear
    buf += waiting.join('');
    waiting = [];
    const breaks = /\r\n|\r|\n/g;
    breaks.lastIndex = from;
    let start = 0, m;
    while (!ended && (m = breaks.exec(buf))) {
      if (m[0] === '\r' && breaks.lastIndex === buf.length && !eof) break; // its LF may be in the next read
      line(buf.slice(start, m.index));
      start = breaks.lastIndex;
    }
    from = (m ? m.index : buf.length) - start;
    buf = buf.slice(start);
    if (eof && !ended) { // a last event without its blank line still counts (recorded bodies end so)
      if (buf) line(buf);
      line('', true);
    }
  };
}

// ----------------------------------------------------------------------------------------- transport

function retryAfter(headers) { // retry-after-ms, or retry-after in seconds (maybe fractional) or as an HTTP date
  const ms = Number(headers['retry-after-ms'] || NaN), value = headers['retry-after'];
  if (ms >= 0) return ms / 1000;
  if (!value) return undefined;
  if (Number(value) >= 0) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

// A failed request or read: our own bound or abort when we fired the signal, otherwise the network.
function transportFailure(error, signal) {
  if (signal.aborted) return signal.reason instanceof Failure ? signal.reason : new Failure('aborted', 'Request was aborted');
  return new Failure('network', `network error: ${[str(error?.code), str(error?.message)].filter(Boolean).join(' ')}`);
}

// node:http, not fetch: Node 20's fetch takes a chunked body cut short by a reset (or a FIN) for a complete
// one when the response says `connection: close`, so a dropped connection would pass for a clean end.
async function attempt(url, init, options) {
  const idleMs = options.timeoutMs ?? 120_000, progressMs = options.progressTimeoutMs ?? 300_000;
  const bound = new AbortController(), signal = AbortSignal.any([call.signal, bound.signal]);
  const expire = (what) => () => bound.abort(new Failure('timeout', what));
  const idle = setTimeout(expire(`no bytes arrived for ${idleMs} ms (the idle timeout, timeoutMs)`), idleMs);
  progressTimer = setTimeout(expire(`no content arrived for ${progressMs} ms (progressTimeoutMs)`), progressMs);
  let req = null, chunks = null;
  const read = async () => { // every wait, the one for the response head included, is under the idle bound
    try {
      const result = await chunks.next();
      idle.refresh();
      return result;
    } catch (error) {
      throw transportFailure(error, signal);
    }
  };
  const readText = async (decoder = new TextDecoder(), text = '') => {
    for (let r; text.length < MAX_ERROR_TEXT && !(r = await read()).done;) text += decoder.decode(r.value, { stream: true });
    return text;
  };
  try {
    const res = await new Promise((resolve, reject) => {
      // agent: false gives the request a connection of its own, closed with it (one call per process would
      // never reuse a kept-alive one). Redirects are not followed: a POST is never re-sent elsewhere.
      req = (url.protocol === 'https:' ? https : http).request(url, { ...init, agent: false, signal }, resolve);
      req.on('error', reject).end(init.body);
    }).catch((error) => { throw transportFailure(error, signal); });
    idle.refresh();
    res.on('error', () => {}); // a failed read reaches us through read()
    chunks = res[Symbol.asyncIterator]();
    const status = res.statusCode, type = res.headers['content-type'] ?? '', asked = retryAfter(res.headers);
    if (status >= 300 && status < 400) {
      throw new Failure('config', `Anthropic answered HTTP ${status}, a redirect to ${res.headers.location} (not followed)`, { status });
    }
    if (status >= 400) {
      const text = await readText().catch(() => ''); // the status decides, even when the body cannot be read
      let body = null;
      try { body = JSON.parse(text); } catch { /* a gateway's HTML page: quoted below */ }
      if (isObject(body?.error)) throw vendorFailure(body, status, asked);
      throw new Failure(statusKind(status), `Anthropic answered HTTP ${status}: ${quote(text) || res.statusMessage}`, { status, retryAfterS: asked });
    }
    if (!/^text\/event-stream\b/i.test(type)) {
      throw protocol(`answered ${status} with ${type || 'no content type'}, not an event stream: ${quote(await readText())}`);
    }
    const decoder = new TextDecoder(); // a character split across reads is joined, not mangled
    let events = 0, head = '';
    const push = sseParser((name, data, cut) => { events++; onEvent(name, data, cut); });
    for (let done = false; !done;) {
      const r = await read();
      done = r.done;
      const text = done ? decoder.decode() : decoder.decode(r.value, { stream: true });
      if (!events && head.length < 300) head += text;
      push(text, done);
      if (ended) return;
    }
    if (!events && /^\uFEFF?\s*</.test(head)) throw protocol(`answered ${status} with an HTML page, not an event stream: ${quote(head)}`);
    throw new Failure('truncated', 'the stream ended before message_stop');
  } finally {
    clearTimeout(idle);
    clearTimeout(progressTimer);
    progressTimer = null;
    req?.destroy(); // the connection is closed whatever ended the attempt
  }
}

const sleep = (ms) => new Promise((resolve) => { // abortable: an abort or a deadline ends it at once
  const timer = setTimeout(resolve, ms);
  call.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

async function run(request) {
  const model = request.model ?? {}, context = request.context ?? {}, options = request.options ?? {};
  message = newMessage(model);
  write({ type: 'start' });
  if (request.aborted || abortRequested) return fail(new Failure('aborted', 'Request was aborted before it was sent'));
  const apiKey = options.apiKey ?? process.env.ANTHROPIC_API_KEY ?? '';
  const headers = { 'content-type': 'application/json', accept: 'text/event-stream', 'anthropic-version': '2023-06-01' };
  if (apiKey) headers['x-api-key'] = apiKey;
  for (const extra of [model.headers, options.headers]) {
    for (const [name, value] of Object.entries(extra ?? {})) if (value != null) headers[name.toLowerCase()] = String(value);
  }
  secrets = [apiKey, ...Object.entries(headers).filter(([k]) => /key|auth|token|secret|pass|cookie|sig/i.test(k)).map(([, v]) => v)]
    .filter((s) => s.length >= 8) // shorter values cannot be told from ordinary text
    .flatMap((s) => [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1), Buffer.from(s).toString('base64')]);
  let url, body;
  try {
    url = new URL(`${(model.baseUrl || 'https://api.anthropic.com').replace(/\/+$/, '')}/v1/messages`);
    if (!/^https?:$/.test(url.protocol)) throw new Error(`the baseUrl's scheme ${url.protocol} is not http(s)`);
    body = JSON.stringify(buildBody(model, context, options));
    headers['content-length'] = String(Buffer.byteLength(body));
  } catch (error) {
    return fail(new Failure('config', `could not build the request: ${error?.message ?? error}`));
  }
  if (options.totalTimeoutMs) { // the whole call, retries included
    const total = setTimeout(() => fail(new Failure('timeout', `the call took longer than ${options.totalTimeoutMs} ms (totalTimeoutMs)`)),
      options.totalTimeoutMs);
    call.signal.addEventListener('abort', () => clearTimeout(total), { once: true });
  }
  const maxRetries = options.maxRetries ?? 2, maxDelayMs = options.maxRetryDelayMs ?? 60_000;
  for (let n = 0; !ended; n++) {
    try {
      return await attempt(url, { method: 'POST', headers, body }, options);
    } catch (error) {
      const failure = error instanceof Failure ? error : new Failure('protocol', `the adapter failed: ${error?.message ?? error}`);
      // Only before any content (a retry would repeat what the consumer saw), only what may succeed again, and
      // never waiting longer than the caller allows: a longer retry-after ends the call at once.
      const asked = failure.info.retryAfterS, delay = asked !== undefined ? asked * 1000 : Math.min(500 * 2 ** n, maxDelayMs);
      if (ended || outputStarted || !RETRYABLE.has(failure.kind) || n >= maxRetries || delay > maxDelayMs) return fail(failure);
      await sleep(delay);
      message = { ...newMessage(model), timestamp: message.timestamp }; // nothing of the failed attempt is kept
      blocks = new Map();
      stop = stopError = null;
    }
  }
}

// -------------------------------------------------------------------------------------- the protocol

process.stdout.on('error', () => process.exit(0)); // the harness went away: nobody is left to tell
process.on('uncaughtException', (error) => fail(new Failure('protocol', `the adapter failed: ${error?.message ?? error}`)));
process.on('SIGINT', abortCall);
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  let msg = null;
  try { msg = JSON.parse(line); } catch { /* not a protocol line: ignored */ }
  if (msg?.type === 'abort') abortCall();
  else if (msg?.type === 'request' && !started) {
    started = true;
    run(msg).catch((error) => fail(new Failure('protocol', `the adapter failed: ${error?.message ?? error}`)));
  }
});
lines.on('close', () => { // the harness has read the terminal (or gave up on the call): end, then exit 0
  stdinClosed = true;
  if (started && !ended) abortCall();
  else exit();
});
write({ type: 'ready' });
