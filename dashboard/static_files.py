"""Static files in production: hashed names, compressed copies, cached for good.

WhiteNoise's CompressedManifestStaticFilesStorage (collectstatic writes `app.<hash>.js`
plus .gz and .br copies; WhiteNoise serves a hashed file with a far-future, immutable
Cache-Control and the compressed copy the browser accepts). The pages' scripts are ES
modules that import each other (`import … from "./describe.js";`): Django rewrites those
imports to the hashed names only when asked (`support_js_module_import_aggregation`),
without which a hashed app.js would load the unhashed, short-cached describe.js — and a
page module fetched through another URL would be a second instance of it. The page's
own module is named by the template with {% static %} (body[data-module]), so it is
hashed too. Development (DEBUG, the tests) keeps Django's plain storage: no
collectstatic needed."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class Storage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True

    def stored_name(self, name: str) -> str:
        """The hashed name once collectstatic has run; before (a first start, a check),
        the plain name — WhiteNoise finds the file in the apps' static dirs — instead of
        every page failing with "Missing staticfiles manifest entry"."""
        try:
            return super().stored_name(name)
        except ValueError:
            return name
