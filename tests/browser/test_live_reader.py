"""Issue 29, items 5, 7, 8 and 11 in the browser: a live refresh leaves the reader's page
as it was (open panels, focus, selection, scroll, typed forms); a pause that ends under a
typed resume form says so, keeps the text, and a click on the old form resumes nothing;
an answer to a question that arrived live lands on the styled task page; on a phone the
board's first screen shows tasks and a task page's first controls are in a bar on screen.
Each at 1440x900 and 390x844, light and dark; screenshots in tests/browser/artifacts/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from a2a import services
from a2a.models import Task
from tests.browser.conftest import live, shot
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_for, wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

LOOKS = [
    pytest.param((1440, 900), "light", id="desktop-light"),
    pytest.param((1440, 900), "dark", id="desktop-dark"),
    pytest.param((390, 844), "light", id="phone-light"),
    pytest.param((390, 844), "dark", id="phone-dark"),
]


def paused_again(task_id: str, handle: str) -> str:
    """Wait until the task is paused by another pause than `handle`; return its handle."""

    def again() -> str | None:
        t = Task.objects.select_related("current_suspension").get(pk=task_id)
        s = t.current_suspension
        return s.handle if t.state == "paused-by-client" and s and s.handle != handle else None

    return wait_for(again, 60, f"task {task_id} to pause again")


@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_a_live_refresh_keeps_what_the_reader_opened_focused_selected_and_scrolled(
    open_as, operator, start, size, scheme
):
    task = start("batch", "Re-render 60 thumbnails", items=60)
    wait_state(task.id, "working", timeout=60)
    page = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    live(page)
    artifact = page.locator("#task-artifacts details.artifact").first
    expect(artifact).to_be_visible()
    artifact.locator("summary").click()
    json_view = page.locator("#task-json details")
    json_view.locator("summary").click()
    copy = json_view.get_by_role("button", name="Copy the JSON")
    copy.focus()
    page.evaluate(
        """() => {
            document.activeElement.__mine = true;
            const text = document.querySelector('#task-timeline .tl-text');
            const range = document.createRange();
            range.selectNodeContents(text);
            getSelection().removeAllRanges();
            getSelection().addRange(range);
            window.scrollTo(0, 200);
        }"""
    )
    selected = page.evaluate("getSelection().toString()")
    assert selected and page.evaluate("window.scrollY") > 0
    # where the selected text sits in the window: what the reader sees stays put (content
    # that grows above it moves the page's scroll offset instead, by scroll anchoring)
    at = "document.querySelector('#task-timeline .tl-text').getBoundingClientRect().top"
    shown_at = page.evaluate(at)
    # a few refreshes: the batch reports progress and appends to its artifact twice a second
    for _ in range(3):
        before = int(page.locator("#task-live").get_attribute("data-version"))
        page.wait_for_function(
            "(v) => Number(document.getElementById('task-live').dataset.version) > v", arg=before
        )
    expect(artifact).to_have_attribute("open", "")
    expect(json_view).to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.__mine === true")
    assert page.evaluate("getSelection().toString()") == selected
    assert abs(page.evaluate(at) - shown_at) < 1
    shot(page, f"live-reader-kept-{scheme}-{size[0]}")


@pytest.mark.parametrize(("size", "scheme"), [LOOKS[0], LOOKS[3]])
def test_a_pause_that_ends_under_a_typed_form_keeps_the_text_and_resumes_nothing(
    open_as, operator, start, size, scheme
):
    task = start("budget", "Research three vendors", budget=100)
    wait_state(task.id, "paused-by-client", timeout=60)
    first = Task.objects.get(pk=task.id).current_suspension.handle
    tab_a = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    tab_b = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    live(tab_a)
    live(tab_b)
    form_b = tab_b.locator("#resume-form")
    form_b.get_by_label("Extra budget (tokens)").fill("-50")
    form_b.get_by_role("button", name="Resume").click()
    # the schema's minimum, said once, beside the field (no "input.budget:" alert)
    form_b = tab_b.locator("#resume-form")
    expect(form_b.locator(".field-error")).to_have_text("must be at least 0")
    expect(tab_b.locator("#action-error")).to_have_count(0)
    expect(tab_b.get_by_text("input.budget")).to_have_count(0)
    live(tab_b)
    form_b.get_by_label("Extra budget (tokens)").fill("1000")

    # tab A resumes with a budget too small: the agent pauses again (a new pause)
    tab_a.locator("#resume-form").get_by_label("Extra budget (tokens)").fill("1")
    tab_a.locator("#resume-form").get_by_role("button", name="Resume").click()
    second = paused_again(task.id, first)

    # tab B: its typed form is kept and says so; the new pause has a form of its own
    kept = tab_b.locator(".stale-holder form")
    expect(tab_b.locator(".stale-note")).to_contain_text("has ended and a new one is waiting")
    expect(kept.get_by_label("Extra budget (tokens)")).to_have_value("1000")
    expect(tab_b.locator("#resume-form").get_by_label("Extra budget (tokens)")).to_have_value("")
    shot(tab_b, f"live-reader-stale-form-{scheme}-{size[0]}")
    # its click resumes nothing: refused, said so, the text kept for the current pause
    kept.get_by_role("button", name="Resume").click()
    expect(tab_b.locator("#action-error")).to_contain_text("Nothing was sent")
    current = tab_b.locator("#resume-form")
    expect(current.get_by_label("Extra budget (tokens)")).to_have_value("1000")
    task_now = Task.objects.get(pk=task.id)
    assert task_now.state == "paused-by-client"
    assert task_now.current_suspension.handle == second
    # pressed again, after reading that, it answers the pause on screen
    current.get_by_role("button", name="Resume").click()
    wait_state(task.id, "completed", timeout=60)


@pytest.mark.parametrize(("size", "scheme"), [LOOKS[1], LOOKS[2]])
def test_moving_a_stale_forms_text_into_the_new_form(open_as, operator, start, size, scheme):
    task = start("budget", "Research three vendors", budget=100)
    wait_state(task.id, "paused-by-client", timeout=60)
    first = Task.objects.get(pk=task.id).current_suspension.handle
    page = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    live(page)
    page.locator("#resume-form").get_by_label("Extra budget (tokens)").fill("1000")
    services.resume_task(task.id, actor=CLIENT, handle=first, resume_input={"budget": 1})
    paused_again(task.id, first)
    page.get_by_role("button", name="Use what I typed in the new form").click()
    expect(page.locator(".stale-holder")).to_have_count(0)
    new = page.locator("#resume-form")
    expect(new.get_by_label("Extra budget (tokens)")).to_have_value("1000")
    expect(new.get_by_label("Extra budget (tokens)")).to_be_focused()
    new.get_by_role("button", name="Resume").click()
    wait_state(task.id, "completed", timeout=60)


@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_a_question_that_arrived_live_is_answered_from_the_bar_onto_the_styled_page(
    open_as, operator, start, size, scheme
):
    task = start("approval", "Roll out release 2.14")  # drafts for 3 s, then asks
    page = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    live(page)
    card = page.locator("#task-answer .inbox-item")
    # the question arrives by live update; on a phone the bar at the screen's foot offers
    # the decision (the first control on the first screen), at desktop widths the
    # Actions column does
    expect(card).to_contain_text("Approve the plan", timeout=60_000)
    approve = page.get_by_role("link", name="Approve…")
    if size[0] < 700:
        box = approve.bounding_box()
        assert box and box["y"] + box["height"] <= size[1], box
        approve.click()
        expect(card.get_by_role("button", name="Send decision")).to_be_focused()
        expect(card.get_by_label("Approve")).to_be_checked()
    else:
        expect(page.locator(".action-bar")).to_be_hidden()
        card.get_by_label("Approve").check()
    shot(page, f"live-reader-bar-{scheme}-{size[0]}")
    card.get_by_role("button", name="Send decision").click()
    expect(page).to_have_url(f"{page.url.split('/tasks/')[0]}/tasks/{task.id}")
    expect(page.locator("header.topbar")).to_be_visible()  # the page, not a fragment
    expect(page.locator(".flash")).to_contain_text("Approved")
    wait_state(task.id, "completed", timeout=60)


@pytest.mark.parametrize(("size", "scheme"), LOOKS)
def test_pause_is_on_the_first_screen_of_a_running_task(open_as, operator, start, size, scheme):
    task = start("scheduled", "Rotate the keys", minutes=60)
    wait_state(task.id, "paused-by-agent", timeout=60)
    page = open_as(operator, f"/tasks/{task.id}", viewport=size, scheme=scheme)
    live(page)
    # the required marker is read out: the accessible name says so
    reason = page.get_by_role("textbox", name="Reason for the pause (required)", exact=True)
    if size[0] < 700:
        hold = page.get_by_role("link", name="Hold…")
        box = hold.bounding_box()
        assert box and box["y"] + box["height"] <= size[1], box
        hold.click()
        expect(reason).to_be_focused()
    else:
        expect(page.locator(".action-bar")).to_be_hidden()
        expect(reason).to_be_in_viewport()
    shot(page, f"live-reader-hold-{scheme}-{size[0]}")
