from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from dashboard import exports, favicon
from dashboard.pages import access, alerts, audit, board, bulk, demo, history, inbox, lockouts, task


class IdConverter:
    """Task and interrupt ids: any text but "/" and NUL (which PostgreSQL cannot even be
    asked about), so a forged id is a 404, never a database error."""

    regex = "[^/\x00]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(IdConverter, "id")

urlpatterns = [
    path("", include("a2a.urls")),
    path("", include("agui.urls")),
    path("admin/", admin.site.urls),
    path("login/", access.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", board.board, name="board"),
    path("tasks/<id:task_id>", task.task_detail, name="task-detail"),
    path("tasks/<id:task_id>/entries/<int:ref>.txt", task.entry_text, name="task-entry-text"),
    path("tasks/<id:task_id>/pause", task.task_pause, name="task-pause"),
    path("tasks/<id:task_id>/resume", task.task_resume, name="task-resume"),
    path("tasks/<id:task_id>/cancel", task.task_cancel, name="task-cancel"),
    path("tasks/<id:task_id>/emit", task.task_emit, name="task-emit"),
    path("tasks/<id:task_id>/rerun", task.task_rerun, name="task-rerun"),
    path("tasks/<id:task_id>/retry", task.task_retry, name="task-retry"),
    path("tasks/<id:task_id>/message", task.task_message, name="task-message"),
    path("favicon-<int:count>.svg", favicon.favicon, name="favicon"),
    path("inbox", inbox.inbox, name="inbox"),
    path("inbox/<id:interrupt_id>", inbox.inbox_item, name="inbox-item"),
    path("inbox/<id:interrupt_id>/answer", inbox.inbox_answer, name="inbox-answer"),
    path("bulk", bulk.bulk, name="bulk"),
    path("bulk/<int:op_id>", bulk.operation, name="bulk-operation"),
    path("bulk/<int:op_id>/progress", bulk.operation_progress, name="bulk-progress"),
    path("demo", demo.demo, name="demo"),
    path("demo/start", demo.demo_start, name="demo-start"),
    path("audit", audit.audit, name="audit"),
    path("history", history.history, name="history"),
    path("alerts", alerts.alerts, name="alerts"),
    path("audit.csv", exports.audit_csv, name="audit-csv"),
    path("lockouts", lockouts.lockouts, name="lockouts"),
    path("lockouts/release", lockouts.release, name="lockouts-release"),
]
