"""Errors the engine raises for bad input; every one carries a sentence fit for a user."""


class EngineError(Exception):
    """Base class: a problem with the caller's input or the data, never a bug."""

    status = 400


class DataError(EngineError):
    """A data file is missing, unreadable or does not match its schema."""

    status = 500


class DomainPackError(DataError):
    """A domain pack cannot be used: it fails to import, declares no valid spec, or its name
    is taken."""


class NotFound(EngineError):
    """A named domain, task, episode or tool does not exist."""

    status = 404


class UnknownDomain(NotFound):
    pass


class UnknownTask(NotFound):
    pass


class UnknownTaskSet(NotFound):
    pass


class UnknownEpisode(NotFound):
    pass


class EpisodeExists(EngineError):
    status = 409


class InitialStateError(EngineError):
    """A task's initial state could not be rebuilt (bad actions or history)."""

    status = 422
