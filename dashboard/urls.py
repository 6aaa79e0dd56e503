from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import views

urlpatterns = [
    path("", include("a2a.urls")),
    path("", include("agui.urls")),
    path("admin/", admin.site.urls),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.board, name="board"),
    path("tasks/<str:task_id>", views.task_detail, name="task-detail"),
    path("tasks/<str:task_id>/pause", views.task_pause, name="task-pause"),
    path("tasks/<str:task_id>/resume", views.task_resume, name="task-resume"),
    path("tasks/<str:task_id>/cancel", views.task_cancel, name="task-cancel"),
    path("tasks/<str:task_id>/emit", views.task_emit, name="task-emit"),
    path("inbox", views.inbox, name="inbox"),
    path("inbox/<str:interrupt_id>", views.inbox_item, name="inbox-item"),
    path("inbox/<str:interrupt_id>/answer", views.inbox_answer, name="inbox-answer"),
    path("bulk", views.bulk, name="bulk"),
    path("demo", views.demo, name="demo"),
    path("demo/start", views.demo_start, name="demo-start"),
    path("audit", views.audit, name="audit"),
]
