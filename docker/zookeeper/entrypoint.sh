#!/bin/bash
# Run one standalone ZooKeeper server in the foreground, logging to stderr.
#
# zoo.cfg is written from the environment unless one is mounted at $ZOO_CONF_DIR/zoo.cfg, with
# the variable names and defaults of Docker Hub's zookeeper image for a standalone server:
# ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS, ZOO_ADMINSERVER_ENABLED,
# ZOO_4LW_COMMANDS_WHITELIST, ZOO_AUTOPURGE_PURGEINTERVAL, ZOO_AUTOPURGE_SNAPRETAINCOUNT,
# ZOO_DATA_DIR, ZOO_DATA_LOG_DIR. ZK_SERVER_HEAP (MB, default 1000) and JVMFLAGS as upstream's
# scripts read them.
set -euo pipefail

conf=${ZOO_CONF_DIR:-/conf}
if [ -n "${ZOO_SERVERS:-}" ] || [ -n "${ZOO_MY_ID:-}" ]; then
    echo "zookeeper-entrypoint: this image runs one standalone server; ZOO_SERVERS / ZOO_MY_ID" \
        "(an ensemble) need Docker Hub's zookeeper image" >&2
    exit 2
fi
if [ ! -f "$conf/zoo.cfg" ]; then
    cat >"$conf/zoo.cfg" <<CFG
dataDir=${ZOO_DATA_DIR:-/data}
dataLogDir=${ZOO_DATA_LOG_DIR:-/datalog}
clientPort=2181
tickTime=${ZOO_TICK_TIME:-2000}
initLimit=${ZOO_INIT_LIMIT:-5}
syncLimit=${ZOO_SYNC_LIMIT:-2}
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}
autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}
admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
CFG
fi

# zookeeper.jar's manifest names its dependencies but no logging binding: slf4j-simple logs
# INFO and above to stderr, which `docker logs` shows.
# shellcheck disable=SC2086  # JVMFLAGS is a list of options
exec java -Xmx"${ZK_SERVER_HEAP:-1000}"m ${JVMFLAGS:-} \
    -Dorg.slf4j.simpleLogger.showDateTime=true \
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ" \
    -cp "$conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf/zoo.cfg"
