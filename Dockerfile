# One image for the Corral master, agents and frameworks:
#   docker run corral master --grpc 0.0.0.0:5050 --http 0.0.0.0:5080
#   docker run corral agent --master master:5050 ...
#   docker run corral run hello --master master:5050
#
# BASE_IMAGE is an ordinary python:3.11-slim by default. Where no registry is reachable, pass a
# locally built one (scripts/build_base_image.sh): --build-arg BASE_IMAGE=corral-base:bookworm.
# With build/wheelhouse and build/dist present (scripts/build_wheelhouse.sh) everything installs
# offline (pip --no-index); otherwise from the package index.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/corral
# Dependencies first, in their own layer: it stays cached while only Corral's code changes.
# The globs let the build go on without a wheelhouse (pyproject.toml always matches); then the
# dependencies (the base install and the server extra) are read from pyproject.toml and come
# from the package index, so a rebuild after a code change reinstalls Corral alone.
COPY pyproject.toml build/wheelhous[e] /wheels/
RUN if ls /wheels/*.whl >/dev/null 2>&1; then \
        /opt/corral/bin/pip install --no-index /wheels/*.whl; \
    else \
        /opt/corral/bin/python -c "import tomllib; p = tomllib.load(open('/wheels/pyproject.toml', 'rb'))['project']; print(*p['dependencies'], *p['optional-dependencies']['server'], sep='\\n')" > /tmp/requirements.txt \
        && /opt/corral/bin/pip install -r /tmp/requirements.txt \
        && rm /tmp/requirements.txt; \
    fi
COPY pyproject.toml README.m[d] /src/
# corral/master, corral/agent and corral/frameworks link to the folders copied beside them.
COPY corral /src/corral
COPY master /src/master
COPY agent /src/agent
COPY frameworks /src/frameworks
COPY pyproject.toml build/dis[t] /dist/
RUN if ls /dist/corral-*.whl >/dev/null 2>&1; then \
        /opt/corral/bin/pip install --no-index --no-deps /dist/corral-*.whl; \
    else \
        /opt/corral/bin/pip install '/src[server]'; \
    fi \
    && /opt/corral/bin/pip check \
    && /opt/corral/bin/python -c "import corral.cli.main" \
    && cd /opt/corral/lib/python3*/site-packages \
    && rm -rf pip pip-* setuptools setuptools-* pkg_resources _distutils_hack distutils-precedence.pth \
        ../../../bin/pip* \
    && find . -depth -type d -name tests -path '*/numpy/*' -exec rm -rf {} + \
    && find . -depth -type d -name tests -path '*/matplotlib/*' -exec rm -rf {} +

FROM ${BASE_IMAGE}
ENV PATH=/opt/corral/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NUMBA_CACHE_DIR=/var/lib/corral/numba-cache
# A fixed uid so named volumes keep their owner across image rebuilds.
RUN groupadd --system --gid 10001 corral \
    && useradd --system --uid 10001 --gid corral --home-dir /var/lib/corral --shell /usr/sbin/nologin corral \
    && mkdir -p /var/lib/corral/master /var/lib/corral/agent /var/lib/corral/serving \
        /var/lib/corral/pki \
    && chown -R corral:corral /var/lib/corral
COPY --from=build /opt/corral /opt/corral
COPY scripts/docker_healthcheck.py /usr/local/bin/corral-healthcheck
USER corral
WORKDIR /var/lib/corral
# Compile the allocator's numba loops into the image, so a master starts in a second, not four.
RUN python3 -c "from corral.master.allocator import DrfAllocator; DrfAllocator()"
EXPOSE 5050 5080
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "/usr/local/bin/corral-healthcheck"]
ENTRYPOINT ["corral"]
CMD ["--help"]
