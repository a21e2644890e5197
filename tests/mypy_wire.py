"""A mypy plugin: ``.get`` of a key a ``TypedDict`` does not declare is an error (mypy itself
types it ``object`` and says nothing), so a misspelled key read with ``.get`` from a typed
frame (``compat.wire``) is caught like one read with ``[...]`` (issue 10)."""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType


def _checked_get(ctx: MethodContext) -> Type:
    if isinstance(ctx.type, TypedDictType) and ctx.args and len(ctx.args[0]) == 1:
        keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0])
        for key in keys or ():
            if key not in ctx.type.items:
                name = ctx.type.fallback.type.name
                ctx.api.fail(
                    f'TypedDict "{name}" has no key "{key}"', ctx.context, code=TYPEDDICT_ITEM
                )
    return typed_dict_get_callback(ctx)


class WireKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname == "typing.Mapping.get" else None


def plugin(version: str) -> type[Plugin]:
    return WireKeys
