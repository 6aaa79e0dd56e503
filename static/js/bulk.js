// A bulk action's page (dashboard/pages/bulk.py): while the action runs on the server, in
// batches, poll its progress once a second and show it; reload once it is done, so the
// refused tasks are listed by name.

const POLL_MS = 1000;

export function start() {
  const box = document.getElementById("bulk-op");
  if (!box || box.dataset.finished === "1") return;
  const bar = document.getElementById("bulk-progress");
  const n = (key) => box.querySelector(`[data-n="${key}"]`);
  const refusals = document.getElementById("bulk-refusals");
  const refresh = document.getElementById("bulk-refresh");
  if (refresh) refresh.hidden = true; // this page refreshes itself
  async function poll() {
    let p;
    try {
      const res = await fetch(box.dataset.progressUrl, { credentials: "same-origin" });
      if (!res.ok) throw new Error(String(res.status));
      p = await res.json();
    } catch (err) {
      setTimeout(poll, POLL_MS * 3);
      return;
    }
    bar.value = p.done + p.refused;
    n("done").textContent = p.done.toLocaleString("en");
    n("refused").textContent = p.refused.toLocaleString("en");
    refusals.replaceChildren(
      ...Object.entries(p.refusals).map(([why, count]) => {
        const li = document.createElement("li");
        li.textContent = `${count.toLocaleString("en")} refused: ${why}`;
        return li;
      }),
    );
    if (p.finished) location.reload();
    else setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
}
