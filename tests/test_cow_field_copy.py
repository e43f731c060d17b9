"""First access to a non-table field copies it from a pickle of the base made once: the copy
must equal the base, share nothing mutable with it, and fall back to deepcopy when needed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from tau_mcp.servers.engine.cow import BaseState, CowDB


class Leaf(BaseModel):
    tags: list[str] = []


class Db(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    leaves: list[Leaf] = []
    pair: tuple[Leaf, Leaf] | None = None
    hooks: Any = None


def test_copies_equal_the_base_and_share_nothing_mutable() -> None:
    shared = Leaf(tags=["a"])
    base = BaseState(Db(leaves=[shared, Leaf(tags=["b"])], pair=(shared, shared)))
    first, second = CowDB(base), CowDB(base)
    assert first.leaves == base.model.leaves and first.pair == base.model.pair
    first.leaves[0].tags.append("mine")
    assert base.model.leaves[0].tags == ["a"] and second.leaves[0].tags == ["a"]
    assert first.leaves[0] is not base.model.leaves[0]
    # Aliasing inside the field survives, as with deepcopy.
    assert first.pair[0] is first.pair[1]  # type: ignore[index]


def test_an_unpicklable_field_is_deep_copied() -> None:
    base = BaseState(Db(hooks=[lambda: None, [1]]))
    db = CowDB(base)
    db.hooks[1].append(2)
    assert base.model.hooks[1] == [1] and db.hooks[1] == [1, 2]
    assert base._pickled["hooks"] is None  # the pickle was tried once, then given up
