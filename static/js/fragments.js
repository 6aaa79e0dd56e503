// Fetch a server-rendered fragment of our own pages (templates autoescape every
// agent-provided string) and swap regions in by id.

export async function fetchFragment(url) {
  const res = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
  if (!res.ok) throw new Error(`${res.status}`);
  const html = await res.text();
  return new DOMParser().parseFromString(html, "text/html");
}

export function isBeingEdited(region) {
  const active = document.activeElement;
  return Boolean((active && region.contains(active) && active.matches("input, textarea, select")) || region.querySelector("[data-dirty]"));
}

export function trackEdits(root = document) {
  root.addEventListener("input", (e) => {
    const form = e.target.closest && e.target.closest("form");
    if (form) form.dataset.dirty = "1";
  });
}

// Run `task` one at a time: a call while it runs asks for one more run once it ends, so a
// burst of live changes costs at most two fetches and the last change is never missed.
export function coalesced(task, label) {
  let inFlight = false;
  let again = false;
  async function run() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      await task();
    } catch (err) {
      console.warn(`${label} failed`, err);
    } finally {
      inFlight = false;
      if (again) {
        again = false;
        run();
      }
    }
  }
  return run;
}

// Bring `current` to look like `fresh` (a server-rendered copy of the same region) while
// keeping what the reader is doing in it: nodes that did not change are the same nodes
// afterwards, so focus, a text selection, scroll offsets and typed values stay; a
// <details> keeps the open state the reader gave it; nodes the browser added (times in
// the reader's clock, their ages: data-local) stay. Issue 29: replacing a region closed
// an opened artifact 0.5 s later, and focus fell to the body.
// attributes the reader or the page's script set, never taken from the server's copy
const READER_ATTRS = new Set(["open", "data-localised", "data-dirty", "data-local"]);

function sameKind(a, b) {
  return (
    a.nodeType === b.nodeType &&
    (a.nodeType !== Node.ELEMENT_NODE || (a.tagName === b.tagName && (a.id || "") === (b.id || "")))
  );
}

function morphAttributes(current, fresh) {
  // the timeline's filter hides entries itself (detail.js applyFilter)
  const readerOwned = (name) => READER_ATTRS.has(name) || (name === "hidden" && current.matches("li.tl, .tl-none"));
  for (const { name } of [...current.attributes]) {
    if (!fresh.hasAttribute(name) && !readerOwned(name)) current.removeAttribute(name);
  }
  for (const { name, value } of fresh.attributes) {
    if (!readerOwned(name) && current.getAttribute(name) !== value) current.setAttribute(name, value);
  }
}

export function morph(current, fresh) {
  if (current.nodeType === Node.ELEMENT_NODE) {
    // a time in the reader's clock: keep it while it names the same moment
    if (current.dataset.localised) {
      if (current.getAttribute("datetime") === fresh.getAttribute("datetime")) return;
      delete current.dataset.localised; // another moment: localiseTimes redoes it
      if (current.nextElementSibling?.dataset.local) current.nextElementSibling.remove();
    }
    // a counter the page ticks itself (countdowns, "3:05 ago"): only its attributes
    if (current.hasAttribute("data-countdown") || current.hasAttribute("data-ago")) {
      morphAttributes(current, fresh);
      return;
    }
    morphAttributes(current, fresh);
    // a form being typed in keeps its controls as typed (detail.js says when it went stale)
    if (current.tagName === "FORM" && current.dataset.dirty) return;
  } else {
    if (current.nodeValue !== fresh.nodeValue) current.nodeValue = fresh.nodeValue;
    return;
  }
  const mine = [...current.childNodes].filter((n) => !(n.nodeType === Node.ELEMENT_NODE && n.dataset.local));
  const theirs = [...fresh.childNodes];
  let i = 0;
  for (; i < theirs.length; i += 1) {
    const had = mine[i];
    const want = theirs[i];
    if (had && sameKind(had, want)) {
      morph(had, want);
    } else {
      const node = document.importNode(want, true);
      if (had) current.insertBefore(node, had);
      else current.append(node);
      if (had) mine.splice(i, 0, node);
    }
  }
  for (; i < mine.length; i += 1) mine[i].remove();
}
