from django.apps import AppConfig


class GrpcDoorConfig(AppConfig):
    """Installed so that Django finds `manage.py run_grpc`; it registers nothing (the gRPC
    process is the only one that imports the binding)."""

    name = "a2a.grpc_door"
    label = "grpc_door"
    verbose_name = "A2A gRPC binding"
