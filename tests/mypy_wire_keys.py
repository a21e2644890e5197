"""A mypy plugin (``[tool.mypy] plugins``): ``frame.get("key")`` on a ``TypedDict`` must
name one of its keys (issue 10).

mypy checks a literal key of ``td["key"]`` but, by design (PEP 589, python/mypy#9906), not of
``td.get("key")``: an unknown key there is typed ``object`` and passes an ``isinstance``
check silently, which is how the rules read the untrusted wire (``compat/wire.py``). This
hook reports such a key and otherwise leaves the typing to mypy's own ``get`` callback.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType, get_proper_type

#: mypy resolves ``get`` of a TypedDict to the Mapping method (its default plugin's
#: callback hooks there too); the check acts only when the receiver is a TypedDict
_GET = frozenset({"typing.Mapping.get", "builtins.dict.get"})


def _checked_get(ctx: MethodContext) -> Type:
    td = get_proper_type(ctx.type)
    if not isinstance(td, TypedDictType):
        return ctx.default_return_type
    if ctx.args and len(ctx.args[0]) == 1:
        for key in try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or ():
            if key not in td.items:
                ctx.api.fail(
                    f'TypedDict has no key "{key}" (.get)', ctx.context, code=TYPEDDICT_ITEM
                )
    return typed_dict_get_callback(ctx)


class WireKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname in _GET else None


def plugin(version: str) -> type[Plugin]:
    return WireKeys
