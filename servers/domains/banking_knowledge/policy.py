"""The agent policy of the `no_knowledge` retrieval config: the config's prompt template with
each `{{component:NAME}}` replaced by the text of prompts/components/NAME.md as stored.

Other retrieval configs compose their own policies (see the retrieval configs' module); this is
the domain's default policy when no config is chosen per episode.
"""

from __future__ import annotations

COMPONENTS = ("policy_header", "additional_instructions")
TEMPLATE = "prompts/no_knowledge.md"
POLICY_FILES = (TEMPLATE, *(f"prompts/components/{name}.md" for name in COMPONENTS))


def compose(texts: list[str]) -> str:
    """`texts`: the template, then the components in COMPONENTS order."""
    template, *parts = texts
    for name, text in zip(COMPONENTS, parts, strict=True):
        template = template.replace(f"{{{{component:{name}}}}}", text)
    return template
