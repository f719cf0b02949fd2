"""The master's gRPC room: the servicers (Scheduler, AgentService, Operator) on one server,
their shared refusals and checks, and the bounded queue each stream writes from. Each servicer
decodes wire messages into core events (``corral.master.wire``), hands them to the runtime and
encodes what comes back; none decides policy."""
