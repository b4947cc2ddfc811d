# plybot: one image for every service (api, worker, bot); the command picks the part.
#   docker build -t plybot .
#   docker compose up --scale worker=4
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # numba writes the engine's compiled kernels here (cache=True); the warm-up below fills it.
    NUMBA_CACHE_DIR=/opt/plybot/numba-cache

RUN useradd --create-home --uid 1000 plybot
WORKDIR /opt/plybot

# Dependencies first, so a code change does not reinstall them: the pinned versions and
# their hashes (requirements.lock, `make lock`), so every build installs the same files.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock

COPY pyproject.toml README.md ./
COPY engine ./engine
COPY worker ./worker
COPY api ./api
COPY bot ./bot
RUN pip install --no-deps .

# Compile the engine at build time (the image holds the compiled cache): a solve, and a
# search per game, exactly what a worker's warm-up runs before its first job.
RUN mkdir -p "$NUMBA_CACHE_DIR" \
    && python -c "from worker.process.jobs import warm_up; print(f'engine compiled in {warm_up():.1f} s')" \
    && chown -R plybot:plybot "$NUMBA_CACHE_DIR"

USER plybot
EXPOSE 8000
# Every service overrides this with a plybot subcommand (see docker-compose.yml).
CMD ["plybot", "--help"]
