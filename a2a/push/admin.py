"""Read-only admin pages for push configs and their delivery log. The client's token and
credentials are never shown (only whether there are some)."""

from django.contrib import admin

from a2a.admin import ReadOnlyAdmin

from .models import PushConfig, PushDelivery


@admin.register(PushConfig)
class PushConfigAdmin(ReadOnlyAdmin):
    list_display = ("config_id", "task", "version", "has_token", "auth_scheme", "created_at")
    list_filter = ("version",)
    search_fields = ("task__id", "config_id")
    fields = (
        "task",
        "config_id",
        "url",
        "version",
        "has_token",
        "auth_scheme",
        "created_by",
        "created_at",
        "updated_at",
        "start_after",
        "scanned_through",
        "pump_owner",
        "pump_until",
    )
    readonly_fields = fields

    @admin.display(boolean=True, description="token")
    def has_token(self, obj: PushConfig) -> bool:
        return bool(obj.token)


@admin.register(PushDelivery)
class PushDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "event_id",
        "config",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("status",)
    search_fields = ("config__task__id", "config__config_id")
    list_select_related = ("config",)
    readonly_fields = [f.name for f in PushDelivery._meta.fields]
