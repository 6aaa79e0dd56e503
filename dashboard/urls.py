from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("a2a.urls")),
    path("", include("agui.urls")),
    path("admin/", admin.site.urls),
]
