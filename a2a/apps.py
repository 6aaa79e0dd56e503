import sys

from django.apps import AppConfig

# How long a thread that wants the GIL waits before the running thread must let go of it
# (Python's default: 5 ms). See A2AConfig.ready().
GIL_SWITCH_SECONDS = 0.001


class A2AConfig(AppConfig):
    """The task core: models, state machine, services and the JSON-RPC transport."""

    name = "a2a"
    verbose_name = "A2A tasks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from a2a import api_keys, checks, events, notify, periodic  # noqa: F401 (checks)
        from a2a.models import ApiKey
        from a2a.services import counts, receipts

        # A thread that holds a write lock (SQLite's, or PostgreSQL's row locks) gives up
        # the GIL at every statement and must get it back from whichever thread of this
        # process is computing meanwhile (the event loop encoding an answer, a projection
        # pass): up to the switch interval each time. At 5 ms, under load, SQLite's one
        # write lock was held 2-3 times as long as its transactions' own work
        # (docs/production.md, "The GIL and the write lock").
        sys.setswitchinterval(GIL_SWITCH_SECONDS)

        # a key saved or deleted here stops being remembered at once (api_keys.verify)
        post_save.connect(api_keys.forget_all, sender=ApiKey, dispatch_uid="apikey-saved")
        post_delete.connect(api_keys.forget_all, sender=ApiKey, dispatch_uid="apikey-deleted")

        events.subscribe(notify.announce, on_commit=True)
        periodic.register(receipts.prune_now_and_then)  # expired receipts: the scheduler's
        periodic.register(counts.compact_now_and_then)  # task counts' changes folded in
