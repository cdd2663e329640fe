"""URL checks for URL-mode elicitation: what a server may ask a person to open.

[`check_url()`][trio_mcp.urls.check_url] judges a URL's text against a
[`URLPolicy`][trio_mcp.urls.URLPolicy] and returns a [`URLCheck`][trio_mcp.urls.URLCheck]
(``raise_for_error()`` raises [`UnsafeURLError`][trio_mcp.urls.UnsafeURLError]);
[`url_elicitation_handler()`][trio_mcp.urls.url_elicitation_handler] builds an elicitation handler
that checks every URL before it asks for consent (a `URLConsent` callback); a URL that fails is
declined.
"""

from __future__ import annotations

from ._exceptions import UnsafeURLError as UnsafeURLError
from ._public import publish as _publish
from ._urls import URLCheck as URLCheck
from ._urls import URLConsent as URLConsent
from ._urls import URLPolicy as URLPolicy
from ._urls import check_url as check_url
from ._urls import url_elicitation_handler as url_elicitation_handler

__all__ = [
    "URLCheck",
    "URLConsent",
    "URLPolicy",
    "UnsafeURLError",
    "check_url",
    "url_elicitation_handler",
]


_publish(__name__, globals(), __all__)
