from django.urls import path

from agui.runs import run_endpoint

urlpatterns = [path("agui/run", run_endpoint, name="agui-run")]
