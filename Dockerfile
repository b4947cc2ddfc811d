# plybot: one image for every service (api, worker, bot); the command picks the part.
#   docker build -t plybot .
#   docker compose up --scale worker=4

# Build stage: the solver's core is a C extension (engine/solver/csrc/), compiled here
# with the full image's gcc into a wheel; the runtime image needs no compiler.
FROM python:3.11 AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY engine ./engine
COPY worker ./worker
COPY api ./api
COPY bot ./bot
RUN pip wheel --no-deps --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 1000 plybot
WORKDIR /opt/plybot

# Dependencies first, so a code change does not reinstall them: the pinned versions and
# their hashes (requirements.lock, `make lock`), so every build installs the same files.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock

COPY --from=build /wheels /tmp/wheels
RUN pip install --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels

# The engine is compiled ahead of time: this only checks that it loads and solves
# (what a worker's warm-up runs before its first job), so a broken build fails here.
RUN python -c "from worker.process.jobs import warm_up; print(f'engine warm in {warm_up():.3f} s')"

USER plybot
EXPOSE 8000
# Every service overrides this with a plybot subcommand (see docker-compose.yml).
CMD ["plybot", "--help"]
