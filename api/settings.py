"""The HTTP API's settings: the core's (:class:`worker.core.settings.Settings`) and its own.

Environment variables as everywhere: prefix ``PLYBOT_`` (``PLYBOT_API_PORT``, ...). Each
field's description is the text of the README's settings table.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, SecretStr, field_validator

from api.addresses import private_networks
from worker.core.settings import Settings


class ApiSettings(Settings):
    """The core's settings and the API's (``plybot serve``): limits, keys, callbacks."""

    # -- HTTP API (`plybot serve`) -------------------------------------------------------
    api_host: str = Field(
        "127.0.0.1", description="Address `plybot serve` listens on (`0.0.0.0` in a container)."
    )
    api_port: int = Field(8000, ge=1, le=65535, description="Port `plybot serve` listens on.")
    api_max_body_bytes: int = Field(
        16_384, ge=256, description="Largest request body the API reads; larger ones get 413."
    )
    api_rate_limit: int = Field(
        120,
        ge=1,
        description="POST requests per client per window; past it 429 with Retry-After. A client "
        "is its `X-API-Key` (one of `PLYBOT_API_KEYS`), else its address.",
    )
    api_rate_limit_reads: int = Field(
        1200, ge=1, description="GET requests under `/v1` per client per window."
    )
    api_rate_window_s: int = Field(60, ge=1, description="Length of the rate-limit window (fixed).")
    api_max_wait_s: float = Field(
        30.0, gt=0, description="Longest `?wait=` (seconds) a client may ask for."
    )
    api_move_deadline_ms: int = Field(
        2000, ge=1, description="Thinking time of the bot's moves in games played over HTTP."
    )
    api_move_wait_s: float = Field(
        15.0,
        gt=0,
        description="How long a move over HTTP waits for the bot's reply before answering with "
        "the bot still thinking (then `GET /v1/games/{id}?wait=S`).",
    )
    api_games_idle_s: float = Field(
        7 * 86400.0, gt=0, description="Games over HTTP untouched this long are deleted."
    )
    api_games_finished_s: float = Field(
        30 * 86400.0, gt=0, description="Finished games are deleted this long after their end."
    )
    api_keys: SecretStr | None = Field(
        None,
        description="Comma-separated API keys clients may send as `X-API-Key` (each its own "
        "client for limits); any other key is refused (401). Secret; never logged.",
    )
    api_require_key: bool = Field(
        False, description="Refuse (401) requests under `/v1` that send no `X-API-Key`."
    )
    api_trusted_proxies: str = Field(
        "",
        description="Comma-separated addresses or networks (CIDR) of reverse proxies whose "
        "`X-Forwarded-For` is believed; from anyone else the header is ignored.",
    )
    api_max_waits: int = Field(
        256,
        ge=1,
        description="Event streams and long polls (`?wait=`, a move awaiting the bot's reply) "
        "open at once in one API process; past it 503 with Retry-After. Sizes the Redis pool.",
    )
    api_max_waits_per_client: int = Field(
        16,
        ge=1,
        description="Event streams and long polls one client may hold open at once in one API "
        "process; past it 429 with Retry-After.",
    )
    api_max_queued: int = Field(
        500,
        ge=1,
        description="Analyses waiting on the queue (all clients) past which new ones are "
        "refused: 503 with Retry-After.",
    )
    api_max_queued_per_client: int = Field(
        20,
        ge=1,
        description="Analyses one client may have queued or running at once; past it 429 with "
        "Retry-After.",
    )
    api_header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="A client must send a request's headers within this many seconds of "
        "starting it (or of connecting); else the connection is closed.",
    )
    api_body_timeout_s: float = Field(
        30.0,
        gt=0,
        description="A client must send a request's body within this many seconds of its "
        "headers; else the connection is closed.",
    )
    api_keep_alive_s: int = Field(
        20,
        ge=1,
        description="An idle kept-alive connection is closed after this many seconds: longer "
        "than common clients keep theirs (5 s), so a client never sends a request on a "
        "connection the server is closing.",
    )
    callback_hosts: str = Field(
        "",
        description="Comma-separated hosts (`host` or `host:port`) a `callback_url` may point to. "
        "Empty: every callback is refused (422).",
    )
    callback_private_networks: str = Field(
        "",
        description="For tests and development only: comma-separated networks (CIDR, e.g. "
        "`127.0.0.1/32`) that webhook deliveries may connect to although they are private, "
        "loopback, link-local or otherwise not public (refused by default, whatever the host "
        "name resolves to).",
    )
    callback_attempts: int = Field(
        6, ge=1, description="Delivery attempts of one callback before it is given up."
    )
    callback_backoff_s: float = Field(
        1.0, gt=0, description="Wait before the first retry of a failed callback; doubles after."
    )
    callback_timeout_s: float = Field(5.0, gt=0, description="Timeout of one callback POST.")
    callback_secret: SecretStr | None = Field(
        None,
        description="Shared secret signing every callback body (`Plybot-Signature`, HMAC-SHA256). "
        "Unset: every callback is refused (422). Secret; never logged.",
    )
    callback_max_per_host: int = Field(
        4, ge=1, description="Callback POSTs in flight at once to one host, per API process."
    )
    callback_max_in_flight: int = Field(
        32, ge=1, description="Callback deliveries one API process handles at once."
    )
    callback_ttl_s: int = Field(
        86400,
        ge=60,
        description="A callback not delivered within this many seconds of its request is "
        "given up; its record expires then too.",
    )

    @field_validator("callback_private_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        private_networks(value)  # a ValueError names a malformed network
        return value


@lru_cache(maxsize=1)
def get_settings() -> ApiSettings:
    """The API process's settings, read once from the environment."""
    return ApiSettings()
