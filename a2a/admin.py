"""Admin pages: a window on tasks and their history, read-only by design — every change
goes through `a2a.services` so it gets the state machine, the lock and the audit event."""

from django.contrib import admin

from a2a.models import ApiKey, Artifact, Message, Suspension, Task, TaskEvent


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("seq", "role", "message_id", "parts", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class SuspensionInline(admin.TabularInline):
    model = Suspension
    fields = ("handle", "initiator", "reason", "suspended_at", "ending", "cause", "ended_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ("id", "state", "skill", "context_id", "updated_at")
    list_filter = ("state", "skill")
    search_fields = ("id", "context_id")
    inlines = [MessageInline, SuspensionInline]


@admin.register(Suspension)
class SuspensionAdmin(ReadOnlyAdmin):
    list_display = ("handle", "task", "initiator", "reason", "suspended_at", "ending", "cause")
    list_filter = ("initiator", "ending", "cause")
    search_fields = ("handle", "task__id", "reason")


@admin.register(TaskEvent)
class TaskEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "task", "kind", "from_state", "to_state", "actor", "created_at")
    list_filter = ("kind",)
    search_fields = ("task__id", "actor", "reason")


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    list_display = ("artifact_id", "task", "name", "updated_at")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with `manage.py create_api_key` (the token is shown once there);
    here they can be looked at and revoked."""

    list_display = ("name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("name", "prefix", "digest", "scopes", "created_at", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        from django.utils import timezone

        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
