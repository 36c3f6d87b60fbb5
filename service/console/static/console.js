// The runpodkit console: a page over the local service's own APIs (REST /v1, the job API /v2 and its
// read-only logs/jobs/workers routes). No framework, no build step. The account key is kept in this
// tab's sessionStorage and sent in the authorization header; it never goes into a URL.

const KEY_ITEM = "runpodkit.apiKey";
const REFRESH_MS = 1000;
/** While the service does not answer, refreshes and log reconnects back off up to this. */
const MAX_RETRY_MS = 10_000;
/** The log view keeps this many lines in the page (the oldest go first), however long it follows. */
const MAX_LOG_LINES = 5000;
/**
 * ... and at most this many characters of messages: a worker's lines may be 64 KiB each, and 5,000 of
 * them (320 M characters) would stall the page for seconds a frame.
 */
const MAX_LOG_CHARS = 4 * 1024 * 1024;
/** Jobs on one page of the queue view; older pages are reached by a cursor (the last job shown). */
const JOBS_PAGE = 50;
/** Log lines read per "Load older lines". */
const OLDER_LOG_LINES = 2000;
/** A value shown as JSON is cut after this many characters (the API has all of it). */
const MAX_JSON_CHARS = 100_000;
/** The chart shows at most this much of the past. */
const CHART_WINDOW_MS = 10 * 60 * 1000;
/** ... and at most this many points (the service keeps the last 600 changes). */
const CHART_POINTS = 600;

const view = document.getElementById("view");
const nav = document.getElementById("nav");
const login = document.getElementById("login");

/** Ends what the current view runs (refresh timer, followed logs). */
let leave = () => {};

// ---------------------------------------------------------------- helpers

// ANSI escape sequences (colours, cursor moves) and control and bidirectional-override characters:
// printed by workers or put in names, they would garble a line or reorder the text after them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
// Invisible characters too (zero-width space, word joiner, BOM, soft hyphen, Unicode tags): "api" and
// "a\u200bpi" would look the same, and tag characters carry text no reader sees. Joiners (U+200C,
// U+200D) are left: scripts and emoji need them.
const UNSEEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;

/**
 * A subdivision flag (England's, Scotland's, Wales'): a black flag, then tag letters naming a region
 * (ISO 3166-2, as UTS #51 has it), then a cancel tag. Its tags are the flag, not hidden text: kept.
 */
const FLAG_TAGS = /\u{1F3F4}[\u{e0061}-\u{e007a}]{2}[\u{e0030}-\u{e0039}\u{e0061}-\u{e007a}]{1,4}\u{e007f}/u;
const UNSEEN_OR_FLAG = new RegExp(`(${FLAG_TAGS.source})|${UNSEEN.source}`, "gu");

/**
 * Text as it is shown: ANSI sequences dropped, other invisible characters written as \uXXXX
 * (\u{XXXXX}) but for the tags of a subdivision flag.
 */
function visible(text) {
  return text.replace(ANSI, "").replace(UNSEEN_OR_FLAG, (c, flag) => {
    if (flag) return c;
    const code = c.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** What a reader sees as one character: a flag, a ZWJ sequence, a letter with its accents. */
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** At most `max` graphemes of `text`, then "..." when cut: a flag or family emoji is kept whole or left out. */
function shorten(text, max) {
  let n = 0;
  for (const { index } of GRAPHEMES.segment(text)) if (n++ === max) return `${text.slice(0, index)}...`;
  return text;
}

/** Children as el() takes them: nothing for null, undefined and false, shown text for strings. */
const nodes = (children) =>
  [children]
    .flat(Infinity)
    .filter((child) => child !== undefined && child !== null && child !== false)
    .map((child) => (child instanceof Node ? child : visible(String(child))));

/**
 * An element with attributes and children (strings become text: nothing is parsed as HTML). `style`
 * is an object of CSS properties, set through the CSSOM: the page's Content-Security-Policy refuses
 * inline style attributes.
 */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "style") for (const [prop, v] of Object.entries(value)) node.style.setProperty(prop, v);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...nodes(children));
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

/**
 * A table; with `link`, each row's first cell is a link to `link(row)` (reached with the keyboard)
 * and a click anywhere on the row follows it (but one that ends selecting text in it).
 */
function table(headers, rows, link) {
  // In its own scrolling box: a narrow window scrolls the table, not the whole page.
  return el("div", { class: "table" }, tableOf(headers, rows, link));
}

function tableOf(headers, rows, link) {
  return el(
    "table",
    {},
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        headers.map((h) => el("th", {}, h)),
      ),
    ),
    el(
      "tbody",
      {},
      rows.map((row) =>
        el(
          "tr",
          {
            class: link ? "link" : undefined,
            "data-id": row.id,
            onclick: link
              ? (event) => {
                  if (event.target.closest("a")) return;
                  // Text selected in the row (an id dragged over to copy) is not a wish to open it.
                  const selection = document.getSelection();
                  if (
                    selection &&
                    !selection.isCollapsed &&
                    selection.containsNode(event.currentTarget, true)
                  )
                    return;
                  // Ctrl/Cmd/Shift-click opens a new tab, as on the row's link.
                  if (event.ctrlKey || event.metaKey || event.shiftKey) window.open(link(row), "_blank");
                  else go(link(row));
                }
              : undefined,
          },
          row.cells.map((cell, i) =>
            el("td", {}, link && i === 0 ? el("a", { href: link(row) }, cell) : cell),
          ),
        ),
      ),
    ),
  );
}

const state = (value) => el("span", { class: `state ${value}` }, value);
/** The browser's time zone, named once on each page that shows times ("Times are in ..."). */
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone ?? "local time";
const sameDay = (a, b) =>
  a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
/**
 * A time in the browser's zone: the time of day when it is today, with its date otherwise (a job of
 * yesterday showed only a time), and the zone's short name (UTC+1, CET).
 */
function time(ms, { millis = false } = {}) {
  if (ms === null || ms === undefined) return "";
  const at = new Date(ms);
  const options = {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    timeZoneName: "short",
    ...(millis ? { fractionalSecondDigits: 3 } : {}),
    ...(sameDay(at, new Date()) ? {} : { year: "numeric", month: "short", day: "numeric" }),
  };
  return at.toLocaleString(undefined, options);
}
const duration = (ms) =>
  ms === undefined || ms === null ? "" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
/** A text a job carries as shown: cut by MAX_JSON_CHARS, saying how much more the API has. */
function cut(text) {
  if (text.length <= MAX_JSON_CHARS) return text;
  // Before the grapheme the bound falls in: half a flag is a broken character, or another flag.
  const end = GRAPHEMES.segment(text).containing(MAX_JSON_CHARS).index;
  return [
    text.slice(0, end),
    el(
      "span",
      { class: "muted" },
      `\n... (${text.length - end} more characters: read the job through the API)`,
    ),
  ];
}

function json(value) {
  if (value === undefined) return el("pre", {}, "(none)");
  return el("pre", {}, cut(JSON.stringify(value, null, 2)));
}

function apiKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** An id in an API path: ids come from the page's address, which anyone can write. */
const seg = (id) => encodeURIComponent(id ?? "");

/**
 * A reply that has not begun this long after its request: the service hangs or the network dropped
 * (a laptop woken, a VPN gone), and fetch would wait minutes saying nothing. Only its start is timed:
 * a megabyte job on a slow network, or a followed log, takes as long as it takes.
 */
const ANSWER_MS = 15_000;

/** No answer began within ANSWER_MS. */
class StalledError extends Error {}

/** A call to the service with the key in the authorization header; 401 signs out. */
async function api(path, init = {}) {
  const stall = new AbortController();
  const timer = setTimeout(() => stall.abort(), ANSWER_MS);
  let reply;
  try {
    reply = await fetch(path, {
      ...init,
      signal: init.signal ? AbortSignal.any([init.signal, stall.signal]) : stall.signal,
      headers: { ...init.headers, authorization: `Bearer ${apiKey()}` },
    });
  } catch (error) {
    if (stall.signal.aborted && !init.signal?.aborted)
      throw new StalledError(`${path}: no answer within ${ANSWER_MS / 1000} s`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  if (reply.status === 401) {
    signOut("The key was refused (401). Paste a key of one of the service's accounts.");
    throw new ApiError(401, "unauthorized");
  }
  if (!reply.ok) {
    const text = await reply.text();
    let message = text;
    try {
      const body = JSON.parse(text);
      message = body.error ?? body.message ?? text;
    } catch {
      // not JSON
    }
    throw new ApiError(reply.status, `${path}: ${reply.status} ${message}`);
  }
  return init.raw ? reply : reply.json();
}

/**
 * Each endpoint's type (QB: a job queue; LB: load-balancing, no queue) by id. REST v1 leaves the type
 * out, as the real service's does; its GraphQL has it.
 */
async function endpointTypes(signal) {
  const { endpoints } = await myself("{ myself { endpoints { id type } } }", signal);
  return new Map(endpoints.map((ep) => [ep.id, ep.type]));
}

/**
 * The account's records through GraphQL, which answers the fields asked for only: the console reads
 * endpoints and templates there with their env names (`env { key }`), never the values, which REST
 * sends whole (secrets such as HF_TOKEN would travel every second to a page that shows names only).
 */
async function myself(query, signal, variables = {}) {
  const reply = await api("/graphql", {
    signal,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  if (!reply.data?.myself)
    throw new Error(`/graphql: ${reply.errors?.[0]?.message ?? "no account in the reply"}`);
  return reply.data.myself;
}

/** What an endpoint runs on: GPU pools (AMPERE_48, -exclusions) or, for a CPU endpoint, its instances. */
const hardware = (ep) =>
  (ep.computeType === "CPU" ? ep.instanceIds : ep.gpuIds.split(",")).filter(Boolean).join(", ") || "any";
const ENDPOINT_FIELDS =
  "id name type templateId computeType gpuIds gpuCount instanceIds workersMin workersMax idleTimeout scalerType scalerValue flashBootType";

/** How long to wait after `failures` failed calls in a row: a second, then doubling up to MAX_RETRY_MS. */
const retryDelay = (failures) => Math.min(REFRESH_MS * 2 ** failures, MAX_RETRY_MS);

/**
 * fetch rejects (a TypeError) when no reply came at all: the service stopped or is restarting; or no
 * reply began in time (StalledError).
 */
const unreachable = (error) => error instanceof TypeError || error instanceof StalledError;

/**
 * Renders the view now and again every second while it is shown (not while its tab is hidden); while the service does not answer,
 * says so and tries again less and less often; once it answers, the message goes. Leaving the view
 * aborts the calls `render(signal)` has on the way, so an answer that comes late is never drawn into
 * the next view (the job page of another job has the same elements). A view gone (404) or an address
 * refused (400, 414, `refused` says why) stops the refreshes.
 */
function every(render, { refused = showRefused } = {}) {
  let timer = null;
  let stopped = false;
  let failures = 0;
  const abort = new AbortController();
  /** Whether a refresh came due while the tab was hidden (then it is done once the tab is shown). */
  let due = false;
  const tick = async () => {
    // A tab in the background (another tab in front, a minimised window) shows nothing to anyone:
    // it asks nothing either, and refreshes the moment it is shown again.
    if (document.hidden) {
      due = true;
      return;
    }
    try {
      await render(abort.signal);
      failures = 0;
      if (!stopped) {
        clearError();
        restoreScroll();
      }
    } catch (error) {
      // A view left while its data was on the way finds its elements gone: nothing to show then.
      if (stopped || (error instanceof ApiError && error.status === 401)) return;
      // What the view shows is gone (an endpoint deleted while its page is open): its data on screen
      // is stale, and asking again every second brings nothing back.
      if (error instanceof ApiError && error.status === 404) {
        stopped = true;
        showGone(error);
        return;
      }
      // Refused (400, 414 for an id longer than any: 4xx but a missing key, a timeout, a rate limit):
      // what the page's address asks for is malformed; asked again, it is refused again.
      if (
        error instanceof ApiError &&
        error.status >= 400 &&
        error.status < 500 &&
        ![408, 429].includes(error.status)
      ) {
        stopped = true;
        refused(error);
        return;
      }
      failures += 1;
      showError(
        unreachable(error)
          ? `The service does not answer (stopped or restarting, or the network is down?): trying again in ${retryDelay(failures) / 1000} s.`
          : error,
      );
    }
    if (!stopped) timer = setTimeout(tick, retryDelay(failures));
  };
  const onShown = () => {
    if (document.hidden || !due || stopped) return;
    due = false;
    tick();
  };
  document.addEventListener("visibilitychange", onShown);
  tick();
  return () => {
    stopped = true;
    abort.abort();
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onShown);
  };
}

/**
 * Replaces the children of the element with id `id` by `build()`, only when `data` differs from what
 * it shows: an unchanged view keeps its text selection, focus and scroll, and is not re-announced;
 * a changed one keeps the focus on the link it was on, and waits while text in it is selected.
 * `build()` may leave a place empty with null, as el() children do (replaceChildren would write
 * "null").
 */
const shown = new WeakMap();
function update(id, data, build) {
  const target = document.getElementById(id);
  if (!target) return;
  // With today's date: a time is shown with its date when not today (time()), so a page left open
  // past midnight redraws yesterday's times with their date.
  const key = `${new Date().toDateString()} ${JSON.stringify(data)}`;
  if (shown.get(target) === key) return;
  // Text the reader is selecting in it (an id, a time to copy) would go with the old nodes: the
  // redraw waits until the selection is let go (a later refresh draws what changed meanwhile).
  const selection = document.getSelection();
  if (selection && !selection.isCollapsed && target.contains(selection.anchorNode)) return;
  // A link or button with the focus in it is replaced too: its new self takes the focus back (a
  // keyboard user on a job's row of a queue with jobs waiting lost it to the page every second).
  const focused = target.contains(document.activeElement) ? document.activeElement : null;
  const same = focused?.getAttribute("href") ?? focused?.id;
  target.replaceChildren(...nodes(build()));
  shown.set(target, key);
  if (same) {
    const again = [...target.querySelectorAll("a[href], [id]")].find(
      (node) => (node.getAttribute("href") ?? node.id) === same,
    );
    again?.focus({ preventScroll: true });
  }
}

/**
 * Shows a view: its heading names the tab and the history entry (Back lists them), and takes the
 * focus, so a keyboard or screen reader user who opened a link is at the new view, not at the top of
 * the page (the link they were on is gone).
 */
function show(name, ...children) {
  view.dataset.view = name;
  view.replaceChildren(...children);
  const heading = view.querySelector("h1");
  document.title = heading ? `${heading.textContent} - runpodkit console` : "runpodkit console";
  if (heading) {
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
  }
}

function showError(error) {
  const existing = view.querySelector(".error[data-view-error]");
  const text = error instanceof Error ? error.message : String(error);
  if (existing) existing.textContent = text;
  else view.prepend(el("p", { class: "error", "data-view-error": true, role: "alert" }, text));
}

/** The view's title, why there is nothing to show, and the way back; nothing stale stays. */
function showGone(error) {
  showRefused(error, `${error.message}: it was deleted, or is not of this account`);
}

/** The view's title, the service's refusal of what its address asks, and the way back. */
function showRefused(error, why = error.message, back = el("a", { href: "#/endpoints" }, "Endpoints")) {
  view.replaceChildren(
    ...nodes([
      view.querySelector("h1"),
      el(
        "p",
        { class: "error", "data-view-error": true, role: "alert" },
        `${why}. This page is no longer refreshed.`,
      ),
      el("div", { class: "links" }, back),
    ]),
  );
}

function clearError() {
  view.querySelector(".error[data-view-error]")?.remove();
}

// ---------------------------------------------------------------- sign in

function signOut(message = "") {
  sessionStorage.removeItem(KEY_ITEM);
  leave();
  leave = () => {};
  view.replaceChildren();
  nav.hidden = true;
  login.hidden = false;
  document.getElementById("login-error").textContent = message;
}

login.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("key");
  const key = input.value.trim();
  // fetch refuses such a header outright; the service's keys are printable ASCII.
  if (!/^[\x21-\x7e]+$/.test(key)) {
    signOut(
      "This key has spaces or characters outside printable ASCII, which no key has: paste the key exactly as the service was given it.",
    );
    return;
  }
  sessionStorage.setItem(KEY_ITEM, key);
  input.value = "";
  // On a slow network the answer takes seconds: say so, and take no second submission meanwhile.
  const submit = login.querySelector("button[type=submit]");
  const label = submit.textContent;
  submit.disabled = true;
  submit.textContent = "Signing in...";
  try {
    await myself("{ myself { id } }");
  } catch (error) {
    // A 401 signed out already, saying why; anything else must say why too, and forget the key.
    if (!(error instanceof ApiError && error.status === 401)) {
      signOut(
        unreachable(error)
          ? "The service does not answer: start it (runpodkit serve) and sign in again."
          : `Signing in failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return;
  } finally {
    submit.disabled = false;
    submit.textContent = label;
  }
  document.getElementById("login-error").textContent = "";
  login.hidden = true;
  nav.hidden = false;
  route();
});

// Sign out is for the console, not this tab only: a tab opened from this one (Ctrl-click, "Open in
// new tab") has a copy of the key and went on showing the account after it.
const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("runpodkit.console") : null;
document.getElementById("signout").addEventListener("click", () => {
  signOut();
  tabs?.postMessage("signed-out");
});
tabs?.addEventListener("message", (event) => {
  if (event.data === "signed-out" && apiKey()) signOut("Signed out in another tab of the console.");
});

// ---------------------------------------------------------------- views

async function endpointsView() {
  show("endpoints", el("h1", {}, "Endpoints"), el("div", { id: "endpoints-list" }, "Loading..."));
  return every(async (signal) => {
    const { endpoints } = await myself(`{ myself { endpoints { ${ENDPOINT_FIELDS} } } }`, signal);
    const rows = endpoints.map((ep) => ({
      id: ep.id,
      cells: [
        ep.name,
        el("code", {}, ep.id),
        ep.type,
        `${ep.workersMin} / ${ep.workersMax}`,
        `${ep.idleTimeout} s`,
        `${ep.scalerType} ${ep.scalerValue}`,
        ep.flashBootType === "OFF" ? "no" : "yes",
        hardware(ep),
      ],
    }));
    update("endpoints-list", endpoints, () =>
      endpoints.length === 0
        ? el(
            "p",
            { class: "muted" },
            "No endpoints yet: deploy one (pulumi up) or create one through the API.",
          )
        : table(
            ["Name", "Id", "Type", "Workers min / max", "Idle timeout", "Scaler", "FlashBoot", "GPUs / CPUs"],
            rows,
            (row) => `#/endpoint/${seg(row.id)}`,
          ),
    );
  });
}

function endpointLinks(id) {
  return el(
    "div",
    { class: "links" },
    el("a", { href: `#/endpoint/${seg(id)}` }, "Settings and workers"),
    el("a", { href: `#/jobs/${seg(id)}` }, "Queue and jobs"),
    el("a", { href: `#/logs/${seg(id)}` }, "Logs"),
  );
}

async function endpointView(id) {
  show(
    "endpoint",
    el("h1", {}, "Endpoint ", el("code", {}, id)),
    endpointLinks(id),
    el("h2", {}, "Settings"),
    el("div", { id: "settings" }),
    el("h2", {}, "Workers"),
    el("div", { id: "workers" }),
  );
  return every(async (signal) => {
    const [{ endpoint: ep }, { workers }] = await Promise.all([
      myself(
        `query ($id: String!) { myself { endpoint(id: $id) { ${ENDPOINT_FIELDS} executionTimeoutMs locations networkVolumeId version env { key } } } }`,
        signal,
        { id },
      ),
      api(`/v2/${seg(id)}/workers`, { signal }),
    ]);
    // Deleted, or not of this account: GraphQL answers null where REST answers 404.
    if (!ep) throw new ApiError(404, `endpoint ${id} not found`);
    const settings = [
      ["Name", ep.name],
      ["Type", ep.type === "LB" ? "LB (load-balancing: no job queue)" : ep.type],
      ["Template", ep.templateId],
      ["Workers min / max", `${ep.workersMin} / ${ep.workersMax}`],
      ["Idle timeout", `${ep.idleTimeout} s`],
      ["Scaler", `${ep.scalerType} ${ep.scalerValue}`],
      ["Execution timeout", duration(ep.executionTimeoutMs)],
      ["FlashBoot", ep.flashBootType === "OFF" ? "no" : "yes"],
      [
        ep.computeType === "CPU" ? "CPU instances" : "GPUs",
        ep.computeType === "CPU" ? hardware(ep) : `${hardware(ep)} x ${ep.gpuCount}`,
      ],
      ["Data centers", ep.locations || "any"],
      ["Network volume", ep.networkVolumeId ?? "none"],
      ["Environment (names only)", ep.env.map((e) => e.key).join(", ") || "none"],
      ["Version", ep.version],
    ];
    update("settings", settings, () =>
      el(
        "dl",
        {},
        settings.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v ?? "")]),
      ),
    );
    update("workers", workers, () =>
      workers.length === 0
        ? el("p", { class: "muted" }, "No workers: they start when jobs arrive (or workersMin > 0).")
        : table(
            ["Worker", "State", "Status", "Created", "Cold start", "Jobs run"],
            workers.map((w) => ({
              id: w.id,
              cells: [
                el("code", {}, w.id),
                // A stopped worker keeps the state it last had (often idle): it is stopped now.
                state(w.desiredStatus === "RUNNING" ? w.state : "stopped"),
                // A worker that did not start says why (its handler did not load, ...).
                w.failure
                  ? el("span", { class: "error" }, `${w.desiredStatus}: ${w.failure}`)
                  : w.desiredStatus,
                time(w.createdAt),
                w.coldStartMs !== null
                  ? duration(w.coldStartMs)
                  : w.desiredStatus === "RUNNING"
                    ? "starting"
                    : "never ready",
                String(w.jobsRun),
              ],
            })),
            (row) => `#/logs/${seg(id)}?worker=${encodeURIComponent(row.id)}`,
          ),
    );
  });
}

const LINES = [
  ["inQueue", "in queue", "#e0a800"],
  ["inProgress", "in progress", "#4a7bd8"],
  ["workers", "workers", "#2e9e5b"],
];

/**
 * Queue depth, running jobs and workers over time (the service records a point at each change; the
 * last point is now), as step lines in inline SVG.
 */
function chart(all) {
  const width = 640;
  const height = 180;
  const pad = 28;
  const now = all.at(-1)?.t ?? 0;
  const from = Math.max(all[0]?.t ?? now, now - CHART_WINDOW_MS);
  // The value in force when the window opens, then every change inside it. A window that opens at the
  // first point keeps every point: changes recorded in the same millisecond as the first still show.
  const before = all.filter((p) => p.t <= from).at(-1);
  const points =
    from === all[0]?.t
      ? all
      : [...(before ? [{ ...before, t: from }] : []), ...all.filter((p) => p.t > from)];
  const max = Math.max(1, ...points.flatMap((p) => LINES.map(([key]) => p[key])));
  const t0 = from;
  const span = Math.max(1, now - t0);
  const x = (t) => pad + ((t - t0) / span) * (width - 2 * pad);
  const y = (v) => height - pad - (v / max) * (height - 2 * pad);
  const node = svg(
    "svg",
    {
      class: "chart",
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: "img",
      "aria-label": "queue and workers",
    },
    svg("line", { x1: pad, y1: y(0), x2: width - pad, y2: y(0), stroke: "#c5cad5" }),
    svg("line", { x1: pad, y1: y(max), x2: width - pad, y2: y(max), stroke: "#eef0f4" }),
    svg("text", { x: 4, y: y(max) + 4, "font-size": 11, fill: "#5a6275" }, String(max)),
    svg("text", { x: 4, y: y(0) + 4, "font-size": 11, fill: "#5a6275" }, "0"),
    // The time axis: where the window opens, and now.
    svg("text", { x: pad, y: height - 8, "font-size": 11, fill: "#5a6275", "data-axis": "from" }, time(t0)),
    svg(
      "text",
      {
        x: width - pad,
        y: height - 8,
        "font-size": 11,
        fill: "#5a6275",
        "text-anchor": "end",
        "data-axis": "now",
      },
      `now (${time(now)})`,
    ),
  );
  for (const [key, label, color] of LINES) {
    const path = points
      .flatMap((p, i) => {
        const at = `${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`;
        return i === 0 ? [at] : [`${x(p.t).toFixed(1)},${y(points[i - 1][key]).toFixed(1)}`, at];
      })
      .join(" ");
    node.append(
      svg("polyline", { points: path, fill: "none", stroke: color, "stroke-width": 2, "data-series": key }),
    );
    node.append(svg("title", {}, label));
  }
  const legend = el(
    "div",
    { class: "legend" },
    LINES.map(([key, label, color]) =>
      el(
        "span",
        {},
        el("i", { style: { background: color } }),
        `${label}: `,
        el("b", { "data-now": key }, String(points.at(-1)?.[key] ?? 0)),
      ),
    ),
  );
  return el("div", {}, node, legend);
}

function timeline(job, scale) {
  const end = job.completedAt ?? Date.now();
  const start = job.startedAt ?? end;
  const px = (ms) => `${Math.max(1, Math.round(ms * scale))}px`;
  return el(
    "div",
    {
      class: "bar",
      title: `waited ${duration(job.delayTime ?? start - job.queuedAt)}, ran ${duration(job.executionTime)}`,
    },
    el("span", { class: "wait", style: { left: "0", width: px(start - job.queuedAt) } }),
    job.startedAt === null
      ? null
      : el("span", {
          class: `run ${job.status}`,
          style: { left: px(start - job.queuedAt), width: px(end - start) },
        }),
  );
}

async function jobsView(id, params) {
  // A page older than the newest: the jobs after this one (a cursor new jobs do not move).
  const before = params.get("before") ?? "";
  show(
    "jobs",
    el("h1", {}, "Queue and jobs of ", el("code", {}, id)),
    endpointLinks(id),
    el("div", { id: "counts", class: "cards" }),
    el("div", { id: "start-issue" }),
    el(
      "div",
      { id: "queue" },
      el("h2", {}, "Queue depth and workers"),
      el("div", { id: "chart" }),
      el("h2", {}, before ? "Older jobs" : "Recent jobs"),
      el("p", { class: "muted" }, `Times are in ${ZONE}.`),
      el("div", { id: "jobs" }),
      el("div", { id: "jobs-pages", class: "links" }),
    ),
  );
  // A cursor the service refuses (mistyped, cut, or its job expired) names no page to show: say which,
  // and lead to the newest page.
  const refused = (error) =>
    before
      ? showRefused(
          error,
          `The page cursor "${shorten(before, 80)}" in this address is not a job of this endpoint that is kept (it expired, or the address was cut or mistyped)`,
          el("a", { href: `#/jobs/${seg(id)}`, "data-page": "newest" }, "Newest jobs"),
        )
      : showRefused(error);
  /** The chart's points recorded so far (the last point of a reply, now, is not one). */
  let recorded = [];
  return every(
    async (signal) => {
      if ((await endpointTypes(signal)).get(id) === "LB") {
        // No queue to show: its requests go straight to its workers (see Settings and workers, Logs).
        update("counts", "LB", () =>
          el(
            "p",
            { class: "muted" },
            "A load-balancing endpoint has no job queue: requests go to its workers' own HTTP paths. Its workers are under Settings and workers, what they print under Logs.",
          ),
        );
        document.getElementById("queue").hidden = true;
        return;
      }
      // The chart's points recorded so far, and the newer ones only: an endpoint that ran thousands of
      // jobs has 600, which were 37 KB a second read again whole.
      const since = recorded.at(-1)?.t;
      const [health, { jobs }, { points: fresh }] = await Promise.all([
        api(`/v2/${seg(id)}/health`, { signal }),
        // Timelines only: inputs and outputs can be megabytes each, and this is read every second.
        api(
          `/v2/${seg(id)}/jobs?limit=${JOBS_PAGE}&summary=1${before ? `&before=${encodeURIComponent(before)}` : ""}`,
          { signal },
        ),
        api(`/v2/${seg(id)}/metrics${since === undefined ? "" : `?since=${since}`}`, { signal }),
      ]);
      // Those at `since` come again (more may have been recorded in that millisecond): kept once.
      recorded = [...recorded.filter((p) => p.t < (since ?? 0)), ...fresh.slice(0, -1)].slice(-CHART_POINTS);
      const points = [...recorded, ...fresh.slice(-1)];
      const counts = [
        ["inQueue", "In queue", health.jobs.inQueue],
        ["inProgress", "In progress", health.jobs.inProgress],
        ["completed", "Completed", health.jobs.completed],
        ["failed", "Failed", health.jobs.failed],
        ["idle", "Workers idle", health.workers.idle],
        ["running", "Workers running", health.workers.running],
        ["initializing", "Workers starting", health.workers.initializing],
      ];
      update("counts", counts, () =>
        counts.map(([key, label, n]) =>
          el("div", { class: "card", "data-count": key }, el("b", {}, String(n)), label),
        ),
      );
      // Jobs waiting on workers that never come up: why, beside the counts (a handler that did not load).
      showStartIssue(health);
      update("chart", points, () => chart(points));
      const longest = Math.max(1, ...jobs.map((j) => (j.completedAt ?? Date.now()) - j.queuedAt));
      // A queued or running job's bar grows with the clock: redrawn each second while one is.
      const live = jobs.some((j) => j.completedAt === null);
      update("jobs", { jobs, now: live ? Date.now() : 0 }, () =>
        jobs.length === 0
          ? el("p", { class: "muted" }, "No jobs yet.")
          : table(
              ["Job", "Status", "Queued", "Timeline (wait, run)", "Delay", "Execution", "Worker"],
              jobs.map((job) => ({
                id: job.id,
                cells: [
                  el("code", {}, job.id),
                  state(job.status),
                  time(job.queuedAt),
                  timeline(job, 220 / longest),
                  duration(job.delayTime),
                  duration(job.executionTime),
                  job.workerId ? el("code", {}, job.workerId) : "",
                ],
              })),
              (row) => `#/job/${seg(id)}/${seg(row.id)}`,
            ),
      );
      // Paging: the newest page, and the page after the last job shown while this one is full.
      const oldest = jobs.length === JOBS_PAGE ? jobs.at(-1).id : null;
      update("jobs-pages", { before, oldest }, () => [
        before ? el("a", { href: `#/jobs/${seg(id)}`, "data-page": "newest" }, "Newest jobs") : null,
        oldest
          ? el(
              "a",
              { href: `#/jobs/${seg(id)}?before=${encodeURIComponent(oldest)}`, "data-page": "older" },
              "Older jobs",
            )
          : null,
      ]);
    },
    { refused },
  );
}

/** A job's error as the worker sent it: a JSON string for a thrown exception, shown parsed. */
function errorOf(text) {
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object") {
      return el(
        "div",
        {},
        el("p", { class: "error" }, cut(`${parsed.error_type ?? "error"}: ${parsed.error_message ?? ""}`)),
        el("pre", { "data-traceback": true }, cut(String(parsed.error_traceback ?? text))),
      );
    }
  } catch {
    // a plain string
  }
  return el("pre", { class: "error" }, cut(text));
}

/** A job's end states: its output or error is there from then on. */
const FINAL = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"]);

/** Why the endpoint's workers do not come up (a handler that does not load), from its /health. */
function showStartIssue(health) {
  update("start-issue", health?.startIssue ?? null, () =>
    health?.startIssue
      ? el(
          "p",
          { class: "error", "data-start-issue": "" },
          `Workers do not start: ${health.startIssue.reason} (${time(Date.parse(health.startIssue.since))})`,
        )
      : [],
  );
}

async function jobView(id, jobId) {
  show(
    "job",
    el("h1", {}, "Job ", el("code", {}, jobId)),
    endpointLinks(id),
    el("div", { id: "start-issue" }),
    el("div", { id: "job" }, "Loading..."),
  );
  /** The job as last read whole, its summary fields kept up to date (null: read it whole next). */
  let job = null;
  /** The stream chunks shown: `at` is the stream position of the first (see RecentJob.streamAt). */
  let stream = { at: 0, chunks: [] };
  /** Bumped when the job is read whole, and when the chunks shown change: what update() compares. */
  let read = 0;
  let streamed = 0;
  return every(async (signal) => {
    if (job !== null) {
      // Its summary and the chunks after those shown: a running job's input (megabytes) is not read
      // again every second, nor a long stream from its start.
      const from = stream.at + stream.chunks.length;
      const { jobs } = await api(`/v2/${seg(id)}/jobs?job=${seg(jobId)}&summary=1&streamFrom=${from}`, {
        signal,
      });
      const now = jobs.find((j) => j.id === jobId);
      // Output and error come with its end, and go with a retry: then it is read whole once.
      const ended = FINAL.has(now?.status) && now?.status !== job.status;
      // Positions that went back: the service restarted, and its chunks (memory only) went with it.
      if (now && !ended && now.retries === job.retries && now.streamAt >= stream.at) {
        const { stream: added = [], ...summary } = now;
        // A client's /stream drained the chunks before streamAt: they are not buffered any more.
        const drained = now.streamAt - stream.at;
        const chunks = [...stream.chunks.slice(drained), ...added];
        if (drained > 0 || added.length > 0) {
          stream = { at: now.streamAt, chunks };
          streamed += 1;
        }
        job = { ...job, ...summary };
        // Not the chunks the service has: read it whole rather than show what it does not.
        if (chunks.length !== now.streamChunks) job = null;
      } else job = null;
    }
    if (job === null) {
      // This one job, however many newer ones the endpoint ran since.
      const { jobs } = await api(`/v2/${seg(id)}/jobs?job=${seg(jobId)}`, { signal });
      const whole = jobs.find((j) => j.id === jobId);
      if (whole) {
        const { stream: chunks = [], ...rest } = whole;
        job = rest;
        stream = { at: whole.streamAt ?? 0, chunks };
        read += 1;
        streamed += 1;
      }
    }
    // A job waiting in the queue says why no worker takes it, as the queue page does.
    showStartIssue(job?.status === "IN_QUEUE" ? await api(`/v2/${seg(id)}/health`, { signal }) : null);
    if (!job) {
      update("job", null, () =>
        el("p", { class: "muted" }, "This job is not kept any more (results expire)."),
      );
      return;
    }
    // Drawn in parts, each when what it shows changed: the input once, the stream as chunks come.
    update("job", "parts", () => [
      el("div", { id: "job-summary" }),
      el("h2", {}, "Input"),
      el("div", { id: "job-input" }),
      el("h2", { id: "job-result-title" }),
      el("div", { id: "job-result" }),
      el("h2", {}, "Stream (chunks not yet read by /stream)"),
      el("div", { id: "job-stream" }),
      el(
        "div",
        { class: "links" },
        el("a", { href: `#/logs/${seg(id)}?job=${encodeURIComponent(jobId)}` }, "This job's logs"),
      ),
    ]);
    const shownJob = job;
    const steps = [
      ["IN_QUEUE", shownJob.queuedAt],
      ["IN_PROGRESS", shownJob.startedAt],
      [
        shownJob.status === "IN_QUEUE" || shownJob.status === "IN_PROGRESS" ? "(running)" : shownJob.status,
        shownJob.completedAt,
      ],
    ];
    const { input: _input, output: _output, error: _error, ...summary } = shownJob;
    update("job-summary", summary, () =>
      el(
        "dl",
        {},
        el("dt", {}, "Status"),
        el("dd", {}, state(shownJob.status)),
        el("dt", {}, "Timeline"),
        el(
          "dd",
          { "data-timeline": true },
          steps
            .filter(([, t]) => t !== null)
            .map(([s, t]) => `${s} ${time(t, { millis: true })}`)
            .join("  ->  "),
        ),
        el("dt", {}, "Delay time"),
        el("dd", {}, duration(shownJob.delayTime)),
        el("dt", {}, "Execution time"),
        el("dd", {}, duration(shownJob.executionTime)),
        el("dt", {}, "Worker"),
        el("dd", {}, shownJob.workerId ?? ""),
        el("dt", {}, "Retries"),
        el("dd", {}, String(shownJob.retries)),
      ),
    );
    update("job-input", read, () => json(shownJob.input));
    update("job-result-title", read, () => (shownJob.error === undefined ? "Output" : "Error"));
    update("job-result", read, () =>
      shownJob.error === undefined ? json(shownJob.output) : errorOf(shownJob.error),
    );
    const chunks = stream.chunks;
    update("job-stream", streamed, () => json(chunks));
  });
}

function logLine(entry) {
  return el(
    "div",
    { class: entry.level, "data-seq": entry.seq, "data-chars": entry.message.length },
    el(
      "span",
      { class: "meta", title: entry.time },
      `${time(Date.parse(entry.time), { millis: true })} ${entry.workerId}${entry.requestId ? ` ${entry.requestId}` : ""} `,
    ),
    `${entry.level.padEnd(5)} ${entry.message}`,
  );
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Follows the endpoint's logs: a chunked JSON-lines reply read as it arrives. When the reply ends or
 * fails (the service stopped or restarted), it says so and follows again from the last line shown,
 * backing off while the service does not answer. The page keeps the newest MAX_LOG_LINES lines, at most MAX_LOG_CHARS characters.
 */
async function logsView(id, params) {
  const worker = params.get("worker") ?? "";
  const job = params.get("job") ?? "";
  const box = el("div", { class: "log", id: "log" });
  const count = el("span", { id: "log-count" }, "0");
  // Announced when the connection changes; the line count is not (it changes many times a second).
  const status = el("span", { id: "log-status", role: "status" }, "Connecting...");
  const filter = el(
    "form",
    {
      class: "links",
      onsubmit: (event) => {
        event.preventDefault();
        const query = new URLSearchParams();
        const data = new FormData(event.target);
        for (const key of ["worker", "job"]) if (data.get(key)) query.set(key, String(data.get(key)));
        go(`#/logs/${seg(id)}${query.size ? `?${query}` : ""}`);
      },
    },
    el("label", {}, "Worker ", el("input", { name: "worker", value: worker })),
    el("label", {}, "Job ", el("input", { name: "job", value: job })),
    el("button", { type: "submit" }, "Filter"),
  );
  const abort = new AbortController();
  /** Lines read by "Load older lines": kept on top of the MAX_LOG_LINES the live view keeps. */
  let older = 0;
  /** Their characters, kept on top of MAX_LOG_CHARS; and the characters of every line in the page. */
  let olderChars = 0;
  let chars = 0;
  const charsOf = (entries) => entries.reduce((sum, entry) => sum + entry.message.length, 0);
  const olderButton = el(
    "button",
    {
      type: "button",
      id: "log-older",
      onclick: async () => {
        const first = box.firstElementChild?.dataset.seq;
        if (first === undefined) return;
        const query = new URLSearchParams({ before: first, limit: String(OLDER_LOG_LINES) });
        if (worker) query.set("worker", worker);
        if (job) query.set("job", job);
        olderButton.disabled = true;
        try {
          const reply = await api(`/v2/${seg(id)}/logs?${query}`, { raw: true, signal: abort.signal });
          const entries = (await reply.text())
            .split("\n")
            .filter((line) => line.trim())
            .map((line) => JSON.parse(line));
          // Prepended where the reader is: the lines in view stay in view.
          const height = box.scrollHeight;
          box.prepend(...entries.map(logLine));
          box.scrollTop += box.scrollHeight - height;
          older += entries.length;
          olderChars += charsOf(entries);
          chars += charsOf(entries);
          n += entries.length;
          count.textContent = String(n);
          if (entries.length < OLDER_LOG_LINES) {
            olderButton.hidden = true;
            olderNote.hidden = false;
          }
        } catch (error) {
          if (!abort.signal.aborted) showError(error);
        } finally {
          olderButton.disabled = false;
        }
      },
    },
    "Load older lines",
  );
  const olderNote = el(
    "span",
    { class: "muted", id: "log-oldest", hidden: true },
    "No older lines are kept.",
  );
  show(
    "logs",
    el("h1", {}, "Logs of ", el("code", {}, id)),
    endpointLinks(id),
    filter,
    el("p", { class: "muted" }, status, " (", count, ` lines; times in ${ZONE}) `, olderButton, olderNote),
    box,
  );
  // Its lines scroll in their own box, of bounded height: the page's place can be restored at once
  // (and saving it waits for that: see saveScroll).
  restoreScroll();
  let n = 0;
  /** The last line shown: a reconnect asks from its time and skips what was shown already. */
  let last = null;
  const seen = (entry) =>
    last !== null &&
    (Date.parse(entry.time) < last.ms || (entry.time === last.time && entry.seq <= last.seq));
  /** Whether the current attempt got the stream (then a failure after it starts the backoff afresh). */
  let answered = false;
  const follow = async () => {
    const query = new URLSearchParams({ follow: "1", limit: "2000" });
    if (worker) query.set("worker", worker);
    if (job) query.set("job", job);
    if (last) query.set("since", last.time);
    const reply = await api(`/v2/${seg(id)}/logs?${query}`, { raw: true, signal: abort.signal });
    answered = true;
    status.textContent = "Following live";
    const reader = reply.body.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      rest += value;
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
      for (const line of lines) {
        if (!line.trim()) continue;
        const entry = JSON.parse(line);
        if (seen(entry)) continue;
        last = { time: entry.time, ms: Date.parse(entry.time), seq: entry.seq };
        box.append(logLine(entry));
        chars += entry.message.length;
        n += 1;
      }
      // The oldest go first, past either bound (the newest line always stays).
      while (
        box.childElementCount > 1 &&
        (box.childElementCount > MAX_LOG_LINES + older || chars > MAX_LOG_CHARS + olderChars)
      ) {
        chars -= Number(box.firstElementChild.dataset.chars);
        box.firstElementChild.remove();
      }
      count.textContent = String(n);
      if (atBottom) box.scrollTop = box.scrollHeight;
    }
  };
  (async () => {
    let failures = 0;
    while (!abort.signal.aborted) {
      answered = false;
      try {
        await follow();
      } catch (error) {
        if (abort.signal.aborted || (error instanceof ApiError && error.status === 401)) return;
        // An answer that is not the log stream (the endpoint went, a bad filter): say it and stop.
        if (error instanceof ApiError && error.status < 500) {
          status.textContent = "Stopped";
          showError(error);
          return;
        }
      }
      if (abort.signal.aborted) return;
      failures = answered ? 0 : failures + 1;
      const wait = retryDelay(failures);
      status.textContent = `Disconnected (the service stopped or is restarting): reconnecting in ${wait / 1000} s`;
      await pause(wait, abort.signal);
      if (!abort.signal.aborted) status.textContent = "Connecting...";
    }
  })();
  return () => abort.abort();
}

async function templatesView() {
  show("templates", el("h1", {}, "Templates"), el("div", { id: "templates-list" }));
  return every(async (signal) => {
    // Every template of the account (endpoint-bound ones too), with env names only.
    const { podTemplates: templates } = await myself(
      "{ myself { podTemplates { id name imageName category isServerless containerRegistryAuthId env { key } } } }",
      signal,
    );
    update("templates-list", templates, () =>
      table(
        ["Name", "Id", "Image", "Category", "Serverless", "Environment (names only)", "Registry auth"],
        templates.map((t) => ({
          id: t.id,
          cells: [
            t.name,
            el("code", {}, t.id),
            el("code", {}, t.imageName),
            t.category,
            t.isServerless ? "yes" : "no",
            t.env.map((e) => e.key).join(", "),
            t.containerRegistryAuthId ?? "",
          ],
        })),
      ),
    );
  });
}

async function volumesView() {
  show("volumes", el("h1", {}, "Network volumes"), el("div", { id: "volumes-list" }));
  return every(async (signal) => {
    const volumes = await api("/v1/networkvolumes", { signal });
    update("volumes-list", volumes, () =>
      table(
        ["Name", "Id", "Size", "Data center"],
        volumes.map((v) => ({
          id: v.id,
          cells: [v.name, el("code", {}, v.id), `${v.size} GB`, v.dataCenterId],
        })),
      ),
    );
  });
}

async function registryView() {
  show(
    "registry",
    el("h1", {}, "Container registry auths"),
    el("p", { class: "muted" }, "Names only: credentials are never shown."),
    el("div", { id: "registry-list" }),
  );
  return every(async (signal) => {
    const auths = await api("/v1/containerregistryauth", { signal });
    update("registry-list", auths, () =>
      table(
        ["Name", "Id"],
        auths.map((a) => ({ id: a.id, cells: [a.name, el("code", {}, a.id)] })),
      ),
    );
  });
}

// ---------------------------------------------------------------- routing (ids only in the hash)

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** A part of the address as written: a malformed escape (%E0%A4%A) is kept as it is, not thrown. */
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

// Back and Forward return to where the reader was in a view. Its content comes after the browser
// would restore the place (on an empty view: the top), so the place is kept, and restored once the
// view has drawn: in this page's memory at each scroll (Back pressed the moment scrolling stops), and
// in the history entry (history.state.scrollY) once scrolling pauses, for a reload.
history.scrollRestoration = "manual";
/** Where to scroll once the view opened has drawn (null: nowhere, it did). */
let scrollBack = null;
let scrollSave = null;
/**
 * The history entry the view shown was drawn for (history.state.entry, set by route()). Back and
 * Forward change history.state before their hashchange calls route(): a save due in between (a
 * busy page runs its timers late) wrote the place of the view left into the entry gone back to.
 */
let drawnEntry = null;
let entries = 0;
/** The last place of each entry of this page's history, by entry id; the least recent go past PLACES. */
const places = new Map();
const PLACES = 1000;
/** Whether the page's place now is the shown view's: it was drawn, and its place restored. */
const placed = () => drawnEntry !== null && scrollBack === null;
function notePlace() {
  if (!placed()) return;
  places.delete(drawnEntry);
  places.set(drawnEntry, window.scrollY);
  if (places.size > PLACES) places.delete(places.keys().next().value);
}
function saveScroll() {
  clearTimeout(scrollSave);
  notePlace();
  // Not the shown view's entry (route() is yet to run), or its place is yet to be restored (the view
  // has not drawn: where the page is now is not where the reader was): the entry keeps its place.
  if (history.state?.entry !== drawnEntry || !placed()) return;
  history.replaceState({ ...history.state, scrollY: window.scrollY }, "");
}
function restoreScroll() {
  if (scrollBack === null) return;
  window.scrollTo(0, scrollBack);
  scrollBack = null;
}
window.addEventListener(
  "scroll",
  () => {
    // The view shown scrolled (route() of the next is yet to run when Back has just been pressed).
    notePlace();
    clearTimeout(scrollSave);
    scrollSave = setTimeout(saveScroll, 200);
  },
  { passive: true },
);
// A link followed right after scrolling: its place is saved before the address changes.
document.addEventListener("click", saveScroll, true);
// A reload right after scrolling: saved before the page goes (Chromium drops a replaceState made in
// pagehide: the reload reopened the list at its top).
window.addEventListener("beforeunload", saveScroll);

async function route() {
  if (!apiKey()) {
    signOut();
    return;
  }
  leave();
  clearTimeout(scrollSave);
  // The view left is still drawn, at its place: kept (its last scroll event may not have come yet).
  notePlace();
  // Ids unique across this tab's loads: a state kept through a reload keeps its id.
  if (history.state?.entry === undefined)
    history.replaceState({ ...history.state, entry: `${performance.timeOrigin}.${++entries}` }, "");
  drawnEntry = history.state.entry;
  // A place kept for this entry (Back, Forward, a reload) is returned to; a new entry starts at the top.
  scrollBack = places.get(drawnEntry) ?? history.state.scrollY ?? 0;
  const [path, search = ""] = location.hash.replace(/^#/, "").split("?");
  const [, name = "endpoints", a, b] = path.split("/").map(decoded);
  const params = new URLSearchParams(search);
  const views = {
    endpoints: () => endpointsView(),
    endpoint: () => endpointView(a),
    jobs: () => jobsView(a, params),
    job: () => jobView(a, b),
    logs: () => logsView(a, params),
    templates: () => templatesView(),
    volumes: () => volumesView(),
    registry: () => registryView(),
  };
  leave = await (views[name] ?? views.endpoints)();
}

window.addEventListener("hashchange", route);
if (apiKey()) {
  login.hidden = true;
  nav.hidden = false;
  route();
} else {
  signOut();
}
