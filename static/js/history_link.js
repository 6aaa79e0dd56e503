// The board's "Search all tasks" link carries what is typed in the board's search box to
// the history page (dashboard/pages/history.py), which searches every task, finished or
// not, on the server: the board itself holds only the live view.
const link = document.getElementById("f-history");
const box = document.getElementById("f-q");
if (link && box) {
  const base = link.getAttribute("href").split("?")[0];
  const update = () => {
    const q = box.value.trim();
    link.setAttribute("href", q ? `${base}?${new URLSearchParams({ q })}` : base);
  };
  box.addEventListener("input", update);
  update();
}
