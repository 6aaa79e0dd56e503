// Words shared by every page: state labels (the same as dashboard/templatetags) and the
// one line that says what a task is doing or waiting for.

export const STATE_LABELS = {
  submitted: "Queued",
  working: "Working",
  "input-required": "Needs input",
  "auth-required": "Needs sign-in",
  "paused-by-client": "Paused",
  "paused-by-agent": "Parked",
  completed: "Completed",
  failed: "Failed",
  canceled: "Canceled",
  rejected: "Rejected",
};

export const STATES = Object.keys(STATE_LABELS);

// What a task's chip says beyond its state: a task that completed after its latest input
// request was rejected (an agent that stands down) is "Completed · rejected", in the
// rejected colour, as on its page; a resumed task no worker has taken yet is "Working ·
// waiting" (its line says since when). "" when nothing is to be added.
export function outcome(entry) {
  if (entry.status === "completed" && entry.lastDecision === "rejected") return "rejected";
  if (entry.status === "working" && entry.waitingForWorkerSince) return "waiting";
  // a hosted ACP agent between turns: its session waits for the next message
  if (entry.status === "working" && entry.idleSince) return "idle";
  return "";
}

// The state a task is counted and filtered under: its status, but "rejected" for one that
// completed after its approval was rejected (its row reads "Completed · rejected"), so the
// "Rejected" count and filter hold every row that says rejected (issue 29). The same rule
// is dashboard.selectors.board_state.
export function boardState(entry) {
  return outcome(entry) === "rejected" ? "rejected" : entry.status;
}

export function chipLabel(entry) {
  const label = STATE_LABELS[entry.status] || entry.status;
  const extra = outcome(entry);
  return extra ? `${label} · ${extra}` : label;
}
export const PAUSED = new Set(["paused-by-client", "paused-by-agent"]);

export function hhmm(iso, seconds = false) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const opts = { hour: "2-digit", minute: "2-digit", hour12: false };
  if (seconds) opts.second = "2-digit";
  return d.toLocaleTimeString([], opts);
}

// Time that reads right (issue 15): a clock time in the reader's zone, the date when it is
// not today, the age beside it ("14:02 · 3 min ago"), and the exact moment with the zone
// named, and UTC, on hover.
export const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";

export function ymd(d) {
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
}

// "14:02" today, "2026-11-24 14:02" another day (`seconds`: "14:02:07"; `date`: always
// with the date, as the audit log's rows).
export function clock(iso, { seconds = false, date = false } = {}) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return "";
  const time = hhmm(iso, seconds);
  return date || ymd(d) !== ymd(new Date()) ? `${ymd(d)} ${time}` : time;
}

// "just now", "3 min ago", "2 h ago", "4 days ago", "5 months ago"; "in 12 min" ahead.
export function ago(iso, now = Date.now()) {
  const t = new Date(iso).getTime();
  if (!iso || Number.isNaN(t)) return "";
  const ms = now - t;
  const s = Math.abs(ms) / 1000;
  let text;
  if (s < 45) return ms >= 0 ? "just now" : "in a moment";
  if (s < 90) text = "1 min";
  else if (s < 45 * 60) text = `${Math.round(s / 60)} min`;
  else if (s < 90 * 60) text = "1 h";
  else if (s < 22 * 3600) text = `${Math.round(s / 3600)} h`;
  else if (s < 36 * 3600) text = "1 day";
  else if (s < 26 * 86400) text = `${Math.round(s / 86400)} days`;
  else if (s < 320 * 86400) text = `${Math.max(1, Math.round(s / (30 * 86400)))} months`.replace(/^1 months/, "1 month");
  else text = `${Math.max(1, Math.round(s / (365 * 86400)))} years`.replace(/^1 years/, "1 year");
  return ms >= 0 ? `${text} ago` : `in ${text}`;
}

// The hover text: "Thu, 26 Nov 2026, 14:02:07 Europe/Paris · 13:02:07 UTC".
export function exact(iso) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return "";
  const local = d.toLocaleString([], {
    weekday: "short", day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
  });
  return `${local} ${ZONE} · ${d.toISOString().slice(11, 19)} UTC`;
}

export function onTimeoutText(value) {
  return (
    {
      fail: "fails",
      resume_with_summary: "resumes with a summary",
      resume_with_input: "resumes with preset input",
    }[value] || "resumes"
  );
}

function waitingFor(pause) {
  const c = pause.conditions || {};
  if (pause.reason) return pause.reason;
  if (c.onEvent) return `waiting for ${c.onEvent}`;
  if (c.trigger) return `waiting for ${c.trigger.event}`;
  return "waiting";
}

function deadlineText(pause) {
  if (!pause.deadline) return "";
  return `, times out ${clock(pause.deadline)}, then ${onTimeoutText(pause.onTimeout)}`;
}

// Do the agent's last words only say the ending's reason again (a failure's text is its
// reason)? a2a.endings.Ending.repeats is the same rule.
function repeats(ended, text) {
  const words = text.split(/\s+/).filter(Boolean).join(" ");
  const reason = ended.reason || "";
  return words === reason || (reason.endsWith("…") && words.startsWith(reason.slice(0, -1)));
}

// "paused by operator:ana: release freeze — since 14:02"
// "parked: waiting for ci.build.completed:1234 — times out 14:32, then fails"
// "resumed, waiting for a worker — since 14:05" (working, no worker has taken the run yet)
export function describe(entry) {
  const s = entry.status;
  const text = entry.statusText || "";
  const p = entry.summaries?.progress;
  const pause = entry.pause;
  if (s === "paused-by-client" && pause) {
    const why = pause.reason ? `: ${pause.reason}` : "";
    return `paused by ${pause.requestedBy}${why} — since ${clock(pause.pausedAt)}${deadlineText(pause)}`;
  }
  if (s === "paused-by-agent" && pause) {
    const dl = pause.deadline
      ? `times out ${clock(pause.deadline)}, then ${onTimeoutText(pause.onTimeout)}`
      : `since ${clock(pause.pausedAt)}`;
    return `parked: ${waitingFor(pause)} — ${dl}`;
  }
  if (s === "input-required") return `waiting for input: ${text || "an answer"} — since ${clock(entry.updatedAt)}`;
  if (s === "auth-required") return `waiting for sign-in — since ${clock(entry.updatedAt)}`;
  if (s === "submitted") return `queued, waiting for a worker — since ${clock(entry.createdAt)}`;
  // resumed, but no worker has taken the run yet (the view clears it when one does)
  if (s === "working" && entry.waitingForWorkerSince) {
    return `resumed, waiting for a worker — since ${clock(entry.waitingForWorkerSince)}`;
  }
  if (s === "working" && entry.idleSince) {
    return `idle — waiting for your next message — since ${clock(entry.idleSince)}`;
  }
  if (s === "working") {
    const step = p ? ` (${p.done} of ${p.total})` : "";
    return `working${step}${text ? `: ${text}` : ""}`;
  }
  const label = STATE_LABELS[s] || s;
  // how it ended (who cancelled and why, which deadline, the agent's error: the view's
  // `ended`, a2a.endings) before the agent's last words, which it does not repeat
  const ended = entry.ended;
  if (ended && ended.text) {
    const words = text && !repeats(ended, text) ? ` — last words: ${text}` : "";
    return `${ended.text} (${clock(entry.updatedAt)})${words}`;
  }
  return `${label.toLowerCase()} at ${clock(entry.updatedAt)}${text ? `: ${text}` : ""}`;
}

// Where a task came in by, as the board's tag shows it and a screen reader says it.
const ORIGIN_SHORT = { a2a: "A2A", agui: "AG-UI", acp: "ACP", dashboard: "Dashboard" };
const ORIGIN_SPOKEN = {
  a2a: "Came from an A2A client",
  agui: "Came from an AG-UI client",
  acp: "Came from an ACP session",
  dashboard: "Started from the dashboard",
};

export function originLabels(origin) {
  if (!origin || !origin.door) return null;
  const door = ORIGIN_SHORT[origin.door] || origin.door;
  const said = ORIGIN_SPOKEN[origin.door] || `Came from ${origin.door}`;
  return {
    short: origin.title ? `${door} · ${origin.title}` : door,
    spoken: origin.title ? `${said}: ${origin.title}` : said,
  };
}

// The fields a search looks in, named as the bulk preview names them; the same list, in the
// same order, as dashboard.selectors.SEARCH_FIELDS.
export const SEARCH_FIELDS = [
  ["title", "title"],
  ["statusText", "status"],
  ["pause.reason", "pause reason"],
  ["pause.requestedBy", "paused by"],
  ["skill", "agent"],
  ["taskId", "task id"],
  ["contextId", "context id"],
];

function fieldText(entry, path) {
  const [head, tail] = path.split(".");
  const value = tail ? (entry[head] || {})[tail] : entry[head];
  return value ? String(value).toLowerCase().split(/\s+/).filter(Boolean).join(" ") : "";
}

// The terms of a search: its words, and each "quoted phrase" as one term; an unclosed
// quote is ignored (dashboard.selectors.search_terms is the same rule).
export function searchTerms(q) {
  const out = [];
  for (const m of (q || "").toLowerCase().matchAll(/"([^"]*)"|([^\s"]+)/g)) {
    const term = (m[1] ?? m[2]).split(/\s+/).filter(Boolean).join(" ");
    if (term) out.push(term);
  }
  return out;
}

// The first field holding every term of q (all in one field: "Judge batch" must not match a
// batch agent's task whose pause reason says "judge"), "" for an empty q, null for no match.
export function searchMatch(entry, q) {
  const terms = searchTerms(q);
  if (!terms.length) return "";
  for (const [path, name] of SEARCH_FIELDS) {
    const text = fieldText(entry, path);
    if (text && terms.every((t) => text.includes(t))) return name;
  }
  return null;
}

// The same rules as dashboard.selectors.entry_matches (the server uses those for bulk).
export function matches(entry, f) {
  if (f.state === "paused") {
    if (!PAUSED.has(entry.status)) return false;
  } else if (f.state && boardState(entry) !== f.state) return false;
  if (f.skill && entry.skill !== f.skill) return false;
  if (f.context && entry.contextId !== f.context) return false;
  if (f.origin && ((entry.origin || {}).door || "") !== f.origin) return false;
  return searchMatch(entry, f.q) !== null;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c) node.append(c);
  return node;
}
