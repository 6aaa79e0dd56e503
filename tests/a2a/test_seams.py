"""The core's seams (docs/architecture.md, rule 5): the doors learn whether a task settled
from `a2a.work`, the scheduler runs what apps register in `a2a.periodic`, and the
dashboard learns the hosted ACP agents from `a2a.skills` — each filled by the app that
knows, from its AppConfig.ready(), however often that runs."""

from __future__ import annotations

import asyncio
import copy
from contextlib import nullcontext

import pytest
from django.apps import apps
from django.conf import settings
from django.test import override_settings

from a2a import periodic, services, skills, work
from a2a.acp_host import config
from a2a.push import delivery
from a2a.runtime import scheduler
from agui import projector
from dashboard.pages import demo
from tests.conftest import AGENT

READY_TWICE = ("runtime", "push", "acp_host", "agui")


def test_running_the_apps_ready_again_registers_nothing_twice():
    before = (periodic.jobs(), work._runner, list(skills.PROVIDERS))
    for label in READY_TWICE:
        apps.get_app_config(label).ready()
    assert (periodic.jobs(), work._runner, list(skills.PROVIDERS)) == before
    assert periodic.jobs().count(delivery.sweep_now_and_then) == 1
    assert periodic.jobs().count(projector.evict_now_and_then) == 1


def test_a_second_runner_of_agents_is_refused():
    other = work.Runner(
        settled=lambda t: True, until_settled=work._at_once, may_run_here=nullcontext
    )
    with pytest.raises(RuntimeError, match="already registered"):
        work.provide(other)


@pytest.mark.django_db(transaction=True)
def test_the_scheduler_runs_every_registered_job_even_after_one_fails():
    ran = []

    def broken() -> int:
        raise RuntimeError("boom")

    def counting() -> int:
        ran.append(1)
        return 1

    periodic.register(broken)
    periodic.register(counting)
    try:
        scheduler.tick()
        scheduler.tick()
    finally:
        periodic.unregister(broken)
        periodic.unregister(counting)
    assert ran == [1, 1]


def test_a_door_learns_from_the_core_when_a_task_settled(make_task):
    """A task with a wakeup no worker served yet is not settled; once it waits for
    someone else it is, and a blocking send's wait returns at once."""
    task = make_task("working")  # its run is queued: no worker runs in this test
    assert work.settled(task.id) is False
    assert asyncio.run(work.until_settled(task.id, 0.01)) is False
    services.complete_task(task.id, actor=AGENT, text="done")
    assert work.settled(task.id) is True
    assert asyncio.run(work.until_settled(task.id, 5)) is True


def test_the_hosted_agents_are_known_through_the_skill_registry():
    """What `manage.py serve` (start a supervisor?), the demo launcher and the task page
    ask, without importing the ACP host."""
    none, one = copy.deepcopy(settings.TASKDECK), copy.deepcopy(settings.TASKDECK)
    none["ACP_HOST"].update(AGENTS_FILE="", AGENTS={})
    one["ACP_HOST"].update(AGENTS_FILE="", AGENTS={"Echo Agent": {"command": "echo"}})
    try:
        with override_settings(TASKDECK=one):
            config.agents.cache_clear()
            assert skills.hosted() == ["echo-agent"]
            assert skills.HOSTED_TAG in skills.get("echo-agent")["tags"]
            assert "echo-agent" in {s["id"] for s in demo.demo_skills()}
        with override_settings(TASKDECK=none):
            config.agents.cache_clear()
            assert skills.hosted() == []
    finally:
        config.agents.cache_clear()
