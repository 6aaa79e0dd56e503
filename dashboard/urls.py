from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from dashboard import exports, favicon, views


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
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.board, name="board"),
    path("tasks/<id:task_id>", views.task_detail, name="task-detail"),
    path("tasks/<id:task_id>/pause", views.task_pause, name="task-pause"),
    path("tasks/<id:task_id>/resume", views.task_resume, name="task-resume"),
    path("tasks/<id:task_id>/cancel", views.task_cancel, name="task-cancel"),
    path("tasks/<id:task_id>/emit", views.task_emit, name="task-emit"),
    path("favicon-<int:count>.svg", favicon.favicon, name="favicon"),
    path("inbox", views.inbox, name="inbox"),
    path("inbox/<id:interrupt_id>", views.inbox_item, name="inbox-item"),
    path("inbox/<id:interrupt_id>/answer", views.inbox_answer, name="inbox-answer"),
    path("bulk", views.bulk, name="bulk"),
    path("demo", views.demo, name="demo"),
    path("demo/start", views.demo_start, name="demo-start"),
    path("audit", views.audit, name="audit"),
    path("audit.csv", exports.audit_csv, name="audit-csv"),
]
