"""The real Open Responses providers as profiles: one module per provider, each a plugin like
any other (``register(registry)`` calls ``registry.profile``), its sources cited in its
docstring. ``ormock.plugins`` registers them all when it is imported (every server, command and
the pytest plugin import it), after the three built-in values of ``ormock.protocol.profile``.

Each module only builds ``Profile`` values: what the provider keeps (``stateful``,
``continuation``), how it frames its streams (``framing``), its error envelope
(``error_body``), what it refuses or drops unread (``refused_fields``, ``ignored_fields``,
``refused_tools``, ``background``) and what ``/v1/models`` lists.
"""

from __future__ import annotations

from ormock.providers import hf_responses, lmstudio, ollama, openrouter, seed002, vllm

__all__ = ["PROVIDERS"]

# the modules, in the order their profiles are listed
PROVIDERS = (openrouter, ollama, vllm, lmstudio, hf_responses, seed002)
