from openadapt_flow.runtime.durable.approval import StateDiverged


class DurableAuthorityBusy(StateDiverged):
    pass
