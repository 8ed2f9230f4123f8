"""Exceptions shared by every part of fastspectral.

Every error caused by bad input names the file (when there is one) and the 1-based line,
so that a user can fix the input without reading a traceback.
"""


class FastSpectralError(Exception):
    """Base class of all fastspectral errors."""


class FormatError(FastSpectralError, ValueError):
    """Malformed input data (treebank, sentence file, dependency file).

    ``str(err)`` reads ``"<path>:<line>: <message>"``; ``path`` and ``line`` are also attributes.
    """

    def __init__(self, message, path=None, line=None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class ModelFileError(FastSpectralError, ValueError):
    """A model file that is missing, truncated, of another kind or of an unsupported version."""


class NotFittedError(FastSpectralError, AttributeError):
    """A model method needing learned parameters was called before ``fit``."""
