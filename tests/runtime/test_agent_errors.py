"""What happens when an agent misbehaves: the task fails with a reason an operator can
read, and nothing else breaks."""

from __future__ import annotations

import pytest

from a2a import services, skills
from a2a.errors import ValidationFailed
from a2a.models import Task
from tests.conftest import CLIENT, user_message
from tests.runtime.conftest import wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def failure_reason(task_id: str) -> str:
    return Task.objects.get(pk=task_id).events.get(kind="failed").reason


def test_an_agent_exception_fails_the_task_with_its_message(start):
    task = start("flaky")
    wait_state(task.id, "failed")
    assert failure_reason(task.id) == "ValueError: the model returned garbage"


def test_a_replay_that_disagrees_with_the_record_fails_instead_of_guessing(start):
    task = start("shifty")
    wait_state(task.id, "paused-by-client")
    wait_idle(task.id)
    services.resume_task(task.id, actor=CLIENT)
    wait_state(task.id, "failed")
    reason = failure_reason(task.id)
    assert "NonDeterministicReplay" in reason and "'before any resume'" in reason


def test_a_task_whose_agent_was_retired_fails_with_a_reason(runtime, transactional_db):
    """A skill offered when the task was made (here by a provider only this process has)
    but run by workers that no longer have its agent (a deployment dropped it)."""
    retired = {"id": "retired-agent", "name": "Retired", "description": "gone"}
    provider = skills.register(lambda: [retired])
    try:
        task = services.create_task(user_message(), actor=CLIENT, skill="retired-agent")
    finally:
        skills.PROVIDERS.remove(provider)
    wait_state(task.id, "failed")
    assert "no agent is registered for skill 'retired-agent'" in failure_reason(task.id)


def test_a_task_for_an_unknown_skill_is_refused_before_anything_is_written(runtime, unchanged):
    with unchanged(), pytest.raises(ValidationFailed) as refused:
        services.create_task(user_message(), actor=CLIENT, skill="no-such-agent")
    assert "unknown skill" in refused.value.errors["skill"][0]
