"""Topics, partitions and leadership (Kafka's ``ReplicationControlManager``).

Every method reads the current image (through a :class:`ControllerState`) and appends the
records that would make the change to the list it is given; nothing changes until those records
are replayed. Batch commands answer one result per topic, with Kafka's error codes and messages.
Where a new partition's replicas go is :mod:`~rackwise.controller.new_partitions`'.

Every PartitionChangeRecord is built by :func:`~rackwise.controller.reassignment.build_change`,
which completes a partition reassignment whenever the change leaves its ISR holding every target
replica, as Kafka's ``PartitionChangeBuilder`` does.

The leadership side: when a broker is fenced, shuts down, re-registers after an unclean
shutdown or unregisters, each partition whose ISR (or ELR) holds it gets a PartitionChangeRecord
from :func:`~rackwise.controller.partition_change.build_partition_change` that takes it out and
elects another leader if it led; when a broker is unfenced, each leaderless partition that may
now elect it does. The partition index of :class:`ControllerState` finds those partitions
without a scan.

Preferred leaders (Kafka's ``maybeBalancePartitionLeaders``): leadership that failover moved
stays where it is until :meth:`ReplicationControl.maybe_balance_partition_leaders` runs a
PREFERRED election on the partitions not led by their first replica, at most
:data:`MAX_ELECTIONS_PER_IMBALANCE` records a run. The first replica takes over only where it
is in the ISR and may lead (registered, unfenced, not shutting down, its directory online);
elsewhere nothing is written.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Final

from rackwise.common import InvalidRequestException, RackwiseError
from rackwise.common.errors import PolicyViolationException
from rackwise.controller.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionTopicResult,
    alter_partition,
)
from rackwise.controller.brokers import (
    has_online_dir,
    is_active,
    leader_acceptor,
    replica_directory,
)
from rackwise.controller.config import (
    MIN_INSYNC_REPLICAS,
    UNCLEAN_LEADER_ELECTION,
    ControllerConfig,
    TopicPolicyRequest,
)
from rackwise.controller.configs import ConfigControl
from rackwise.controller.configschema import (
    LEADERS_PREFERENCE,
    MIN_INSYNC_RACKS,
    MIN_INSYNC_RACKS_LEVEL,
)
from rackwise.controller.domains import (
    LeaderOrder,
    RackRule,
    check_assignment_domains,
    leader_order,
    preferred_leader,
    topic_preference,
)
from rackwise.controller.errors import (
    SUCCESS,
    ApiError,
    TopicDeletionDisabledException,
    TopicExistsException,
    UnknownTopicIdException,
    UnknownTopicOrPartitionException,
)
from rackwise.controller.messages import (
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    DeletableTopicResult,
    ReassignableTopic,
    ReassignableTopicResult,
)
from rackwise.controller.new_partitions import (
    added_partition_records,
    manual_partitions,
    placed_partitions,
    preferred_first,
)
from rackwise.controller.partition_change import Election
from rackwise.controller.reassignment import alter_partition_reassignments, build_change
from rackwise.controller.state import ControllerState, TopicIdPartition
from rackwise.controller.topics import (
    DUPLICATE_NAME,
    added_partitions,
    check_new_topic_name,
    check_partitions_per_request,
    initial_isr,
    partition_record,
    request_level_errors,
    requested_partitions,
)
from rackwise.image import ConfigResource, MetadataImage, PartitionRegistration
from rackwise.placement import ReplicaPlacer
from rackwise.records import ZERO_UUID, kafka_uuid
from rackwise.records.constants import (
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    NO_LEADER,
    TOPIC_RESOURCE,
    UNFENCE,
)
from rackwise.records.metadata import (
    BrokerRegistrationChangeRecordV0,
    BrokerRegistrationChangeRecordV1,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)
from rackwise.topology import LeadersPreference

MAX_ELECTIONS_PER_IMBALANCE: Final = 1_000
"""Kafka's ``MAX_ELECTIONS_PER_IMBALANCE``: the most records one preferred-leader run writes;
a run that reaches it asks to be run again at once."""
NOBODY: Final = NO_LEADER
"""No broker (for the broker arguments of :meth:`ReplicationControl.update_leaders_and_isrs`)."""


class ReplicationControl:
    """Topic commands and the leadership effects of broker changes (module docstring).
    ``new_topic_id`` draws a topic id; ``placer`` is ``broker.replica.placer``;
    ``max_elections_per_imbalance`` bounds a preferred-leader run (Kafka's builder setting)."""

    def __init__(
        self,
        config: ControllerConfig,
        configs: ConfigControl,
        placer: ReplicaPlacer,
        new_topic_id: Callable[[], uuid.UUID],
    ) -> None:
        self.config = config
        self.configs = configs
        self.placer = placer
        self.new_topic_id = new_topic_id
        self.max_elections_per_imbalance = MAX_ELECTIONS_PER_IMBALANCE

    # ---- CreateTopics ----------------------------------------------------------------------

    def create_topics(
        self,
        state: ControllerState,
        topics: Sequence[CreatableTopic],
        records: list[Any],
    ) -> list[CreatableTopicResult]:
        """One result per distinct name, in request order; the records of every topic that
        succeeded are appended to ``records`` (the caller drops them for validate-only). A
        request over the partitions bound is refused as a whole before anything is placed."""
        check_partitions_per_request(requested_partitions(topics, self.config.num_partitions))
        errors = request_level_errors((t.name for t in topics), creating=True)
        results: dict[str, CreatableTopicResult] = {}
        for topic in topics:
            if topic.name in errors or topic.name in results:
                continue
            made: list[Any] = []
            try:
                results[topic.name] = self._create_topic(state, topic, made)
            except RackwiseError as e:
                errors[topic.name] = ApiError.of(e)
                continue
            records.extend(made)
        order = dict.fromkeys(t.name for t in topics)
        return [results.get(n) or CreatableTopicResult(n, errors[n]) for n in order]

    def _create_topic(
        self, state: ControllerState, topic: CreatableTopic, made: list[Any]
    ) -> CreatableTopicResult:
        image = state.image
        if topic.name in image.topics_by_name:  # before the collision check, as Kafka answers
            raise TopicExistsException(f"Topic '{topic.name}' already exists.")
        check_new_topic_name(topic.name, state.collision_names)
        self.configs.check_topic_configs(topic.configs)
        overrides = {k: v for k, v in topic.configs.items() if v is not None}
        if topic.assignments:
            partitions = manual_partitions(image, topic)
            policy = TopicPolicyRequest(
                topic.name, None, None, {p: r for p, (r, _) in partitions.items()}, overrides
            )
        else:
            partitions = placed_partitions(
                image,
                topic,
                self.placer,
                default_num_partitions=self.config.num_partitions,
                default_replication_factor=self.config.default_replication_factor,
            )
            first_replicas = partitions[0][0]
            policy = TopicPolicyRequest(
                topic.name, len(partitions), len(first_replicas), None, overrides
            )
        self._check_policy(policy)
        values = {e.name: e.value for e in self.configs.effective_topic_configs(image, overrides)}
        rows = {p: r for p, (r, _) in partitions.items()}
        manual = bool(topic.assignments)
        check_assignment_domains(image, topic.name, rows, RackRule.of(values), manual=manual)
        order = leader_order(image, topic_preference(values))
        if order is not None and not manual:
            for pid, (placed, _) in partitions.items():
                first = tuple(preferred_first(placed, order))
                partitions[pid] = (first, initial_isr(image, first))
        topic_id = self.new_topic_id()
        made.append(TopicRecord(name=topic.name, topic_id=topic_id))
        made.extend(
            self.configs.config_records(ConfigResource(TOPIC_RESOURCE, topic.name), overrides)
        )
        for pid in sorted(partitions):
            replicas, isr = partitions[pid]
            made.append(partition_record(image, topic_id, pid, replicas, isr, order))
        return CreatableTopicResult(
            topic.name,
            SUCCESS,
            topic_id,
            len(partitions),
            len(partitions[min(partitions)][0]),
            self.configs.effective_topic_configs(image, overrides),
        )

    def _check_policy(self, request: TopicPolicyRequest) -> None:
        policy = self.config.create_topic_policy
        if policy is None:
            return
        try:
            policy.validate(request)
        except PolicyViolationException:
            raise
        except Exception as e:
            raise PolicyViolationException(f"{type(e).__name__}: {e}") from e

    # ---- CreatePartitions ------------------------------------------------------------------

    def create_partitions(
        self,
        state: ControllerState,
        topics: Sequence[CreatePartitionsTopic],
        records: list[Any],
    ) -> list[CreatePartitionsTopicResult]:
        """New partitions for each topic, placed after its last one (or as given); a request
        adding more than the partitions bound is refused as a whole first."""
        check_partitions_per_request(added_partitions(state.image, topics))
        errors = request_level_errors((t.name for t in topics), creating=False)
        results: dict[str, CreatePartitionsTopicResult] = {}
        for topic in topics:
            if topic.name in errors or topic.name in results:
                continue
            try:
                rule, preference = self.domain_rules(state.image, topic.name)
                pinned = leader_order(state.image, preference)
                made = added_partition_records(state.image, topic, self.placer, pinned)
                rows = {r.partition_id: r.replicas for r in made}
                manual = topic.assignments is not None
                check_assignment_domains(state.image, topic.name, rows, rule, manual=manual)
            except RackwiseError as e:
                results[topic.name] = CreatePartitionsTopicResult(topic.name, ApiError.of(e))
                continue
            records.extend(made)
            results[topic.name] = CreatePartitionsTopicResult(topic.name)
        order = dict.fromkeys(t.name for t in topics)
        return [results.get(n) or CreatePartitionsTopicResult(n, errors[n]) for n in order]

    # ---- DeleteTopics ----------------------------------------------------------------------

    def delete_topics(
        self,
        state: ControllerState,
        names: Sequence[str],
        topic_ids: Sequence[uuid.UUID],
        records: list[Any],
    ) -> list[DeletableTopicResult]:
        """Delete topics named by name or by id (Kafka's ``ControllerApis.deleteTopics`` and
        ``deleteTopics``): a RemoveTopicRecord each, the topic's configs go with it."""
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledException()
        image = state.image
        invalid = InvalidRequestException.error_code
        results: list[DeletableTopicResult] = []
        dup_names = {n for n, count in Counter(names).items() if count > 1}
        dup_ids = {i for i, count in Counter(topic_ids).items() if count > 1}
        results += [
            DeletableTopicResult(n, ZERO_UUID, ApiError(invalid, DUPLICATE_NAME))
            for n in dict.fromkeys(n for n in names if n in dup_names)
        ]
        results += [
            DeletableTopicResult(None, i, ApiError(invalid, "Duplicate topic id."))
            for i in dict.fromkeys(i for i in topic_ids if i in dup_ids)
        ]
        chosen: dict[uuid.UUID, str] = {}
        for topic_id in dict.fromkeys(i for i in topic_ids if i not in dup_ids):
            topic = image.topics_by_id.get(topic_id)
            if topic_id == ZERO_UUID:
                reason = f"Attempt to find topic with invalid topicId {kafka_uuid(topic_id)}"
                results.append(DeletableTopicResult(None, topic_id, ApiError(invalid, reason)))
            elif topic is None:
                results.append(
                    DeletableTopicResult(None, topic_id, ApiError.of(UnknownTopicIdException()))
                )
            else:
                chosen[topic_id] = topic.name
        for name in dict.fromkeys(n for n in names if n not in dup_names):
            named = image.topic(name)
            if named is None:
                error = ApiError.of(UnknownTopicOrPartitionException())
                results.append(DeletableTopicResult(name, ZERO_UUID, error))
            elif named.topic_id in chosen:
                del chosen[named.topic_id]
                reason = "The provided topic name maps to an ID that was already supplied."
                error = ApiError(invalid, reason)
                results.append(DeletableTopicResult(name, named.topic_id, error))
            else:
                chosen[named.topic_id] = name
        for topic_id, name in chosen.items():
            records.append(RemoveTopicRecord(topic_id=topic_id))
            results.append(DeletableTopicResult(name, topic_id))
        return results

    # ---- leadership ------------------------------------------------------------------------

    def domain_rules(self, image: MetadataImage, topic: str) -> tuple[RackRule, LeadersPreference]:
        """The topic's ``min.insync.racks`` rule and ``leaders.preference``."""
        keys = (MIN_INSYNC_RACKS, MIN_INSYNC_RACKS_LEVEL, LEADERS_PREFERENCE)
        values = {key: self.configs.topic_value(image, topic, key) for key in keys}
        return RackRule.of(values), topic_preference(values)

    def leader_order(self, image: MetadataImage, topic_id: uuid.UUID) -> LeaderOrder | None:
        """The order the topic's elections try replicas in (None: Kafka's)."""
        return leader_order(image, self.domain_rules(image, image.topics_by_id[topic_id].name)[1])

    def preferred_leader(
        self, image: MetadataImage, topic_id: uuid.UUID
    ) -> Callable[[PartitionRegistration], int]:
        """Where the preferred-leader balancing moves the leadership of each of the topic's
        partitions; the topic's configs are read once, for all of them."""
        return partial(preferred_leader, self.leader_order(image, topic_id))

    def min_isr(self, image: MetadataImage, topic_id: uuid.UUID) -> int:
        """The topic's effective ``min.insync.replicas`` (:meth:`_topic_settings`)."""
        return self._topic_settings(image, topic_id)[1]

    def _topic_settings(self, image: MetadataImage, topic_id: uuid.UUID) -> tuple[Election, int]:
        """The topic's election (UNCLEAN if ``unclean.leader.election.enable``) and its
        effective minimum ISR: ``min.insync.replicas``, at most the replication factor."""
        topic = image.topics_by_id[topic_id]
        unclean = self.configs.topic_value(image, topic.name, UNCLEAN_LEADER_ELECTION)
        election = Election.UNCLEAN if unclean.strip().lower() == "true" else Election.ONLINE
        try:
            min_isr = int(self.configs.topic_value(image, topic.name, MIN_INSYNC_REPLICAS))
        except ValueError:  # a static value nobody checked; Kafka's default then
            min_isr = 1
        if topic.partitions:
            min_isr = min(min_isr, len(topic.partitions[min(topic.partitions)].replicas))
        return election, min_isr

    def alter_partition(
        self, state: ControllerState, request: AlterPartitionRequest, records: list[Any]
    ) -> list[AlterPartitionTopicResult]:
        """AlterPartition (:mod:`rackwise.controller.alter_partition`), once the requester's
        broker epoch has been checked."""
        return alter_partition(
            state.image,
            request,
            records,
            topic_settings=self._topic_settings,
            elr_enabled=self.config.elr_enabled,
        )

    def alter_partition_reassignments(
        self,
        state: ControllerState,
        topics: Sequence[ReassignableTopic],
        records: list[Any],
        *,
        allow_replication_factor_change: bool = True,
    ) -> list[ReassignableTopicResult]:
        """AlterPartitionReassignments (:mod:`rackwise.controller.reassignment`)."""
        return alter_partition_reassignments(
            state.image,
            topics,
            records,
            topic_settings=self._topic_settings,
            elr_enabled=self.config.elr_enabled,
            allow_replication_factor_change=allow_replication_factor_change,
            domain_rules=self.domain_rules,
        )

    def update_leaders_and_isrs(
        self,
        image: MetadataImage,
        partitions: Iterable[TopicIdPartition],
        records: list[Any],
        *,
        remove: int = NOBODY,
        add: int = NOBODY,
        unclean_shutdown: int = NOBODY,
    ) -> None:
        """Kafka's ``generateLeaderAndIsrUpdates``: for each partition, take ``remove`` and
        ``unclean_shutdown`` out of the ISR (and out of the ELR for the latter), and elect a
        leader among acceptable replicas; ``add`` counts as acceptable though the image still
        has it fenced (it is being unfenced by the same records)."""
        settings: dict[uuid.UUID, tuple[Election, int, LeaderOrder | None]] = {}
        for topic_id, partition_id in partitions:
            partition = image.topics_by_id[topic_id].partitions[partition_id]
            if topic_id not in settings:
                order = self.leader_order(image, topic_id)
                settings[topic_id] = (*self._topic_settings(image, topic_id), order)
            election, min_isr, order = settings[topic_id]

            def acceptable(broker: int, partition: Any = partition) -> bool:
                if broker in (remove, unclean_shutdown) or broker < 0:
                    return False
                if broker != add and not is_active(image, broker):
                    return False
                return has_online_dir(image, broker, replica_directory(partition, broker))

            record = build_change(
                partition,
                topic_id,
                acceptable,
                target_isr=[b for b in partition.isr if b not in (remove, unclean_shutdown)],
                election=election,
                elr_enabled=self.config.elr_enabled,
                min_isr=min_isr,
                unclean_shutdown_replicas=() if unclean_shutdown < 0 else (unclean_shutdown,),
                leader_order=order,
            )
            if record is not None:
                records.append(record)

    def handle_broker_fenced(
        self, state: ControllerState, broker_id: int, records: list[Any]
    ) -> None:
        """Take the broker out of every ISR and leadership, then fence it."""
        registration = state.image.brokers.get(broker_id)
        if registration is None:
            raise RackwiseError(f"BUG: cannot find the registration of broker {broker_id}")
        partitions = state.partition_index.partitions_with_isr(broker_id)
        self.update_leaders_and_isrs(state.image, partitions, records, remove=broker_id)
        records.append(
            BrokerRegistrationChangeRecordV0(
                broker_id=broker_id, broker_epoch=registration.broker_epoch, fenced=FENCE
            )
        )

    def handle_broker_unfenced(
        self, state: ControllerState, broker_id: int, broker_epoch: int, records: list[Any]
    ) -> None:
        """Unfence the broker, then let leaderless partitions elect it where it may lead."""
        records.append(
            BrokerRegistrationChangeRecordV0(
                broker_id=broker_id, broker_epoch=broker_epoch, fenced=UNFENCE
            )
        )
        leaderless = state.partition_index.leaderless_partitions()
        self.update_leaders_and_isrs(state.image, leaderless, records, add=broker_id)

    def handle_broker_in_controlled_shutdown(
        self, state: ControllerState, broker_id: int, broker_epoch: int, records: list[Any]
    ) -> None:
        """Mark the broker as shutting down and move its leaderships and ISR places."""
        registration = state.image.brokers[broker_id]
        if not registration.in_controlled_shutdown:
            records.append(
                BrokerRegistrationChangeRecordV1(
                    broker_id=broker_id,
                    broker_epoch=broker_epoch,
                    in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN,
                )
            )
        partitions = state.partition_index.partitions_with_isr(broker_id)
        self.update_leaders_and_isrs(state.image, partitions, records, remove=broker_id)

    def handle_broker_unclean_shutdown(
        self, state: ControllerState, broker_id: int, records: list[Any]
    ) -> None:
        """A broker came back with a new incarnation, fenced: with ELR, it leaves every ISR
        and ELR (it may have lost data it had acknowledged), as in Kafka. Without ELR it loses
        its leaderships and ISR places as a fenced broker does (Kafka 3 leaves it leader of
        its partitions until it is unfenced, or for ever if it never is)."""
        index = state.partition_index
        if not self.config.elr_enabled:
            partitions = index.partitions_with_isr(broker_id)
            self.update_leaders_and_isrs(state.image, partitions, records, remove=broker_id)
            return
        for partitions in (
            index.partitions_with_isr(broker_id),
            index.partitions_with_elr(broker_id),
        ):
            self.update_leaders_and_isrs(
                state.image, partitions, records, unclean_shutdown=broker_id
            )

    def handle_broker_unregistered(
        self, state: ControllerState, broker_id: int, broker_epoch: int, records: list[Any]
    ) -> None:
        """Take the broker out of every ISR and leadership, then unregister it."""
        index = state.partition_index
        for partitions in (
            index.partitions_with_isr(broker_id),
            index.partitions_with_elr(broker_id),
        ):
            self.update_leaders_and_isrs(state.image, partitions, records, remove=broker_id)
        records.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker_epoch))

    def maybe_balance_partition_leaders(
        self,
        state: ControllerState,
        records: list[Any],
        max_elections: int | None = None,
    ) -> bool:
        """A PREFERRED election for each partition not led by its first replica, in
        (topic id, partition) order, until ``max_elections`` records (default
        ``max_elections_per_imbalance``) are appended. Returns whether it stopped at the
        bound (there may be more to elect)."""
        if max_elections is None:
            max_elections = self.max_elections_per_imbalance
        image = state.image
        min_isrs: dict[uuid.UUID, tuple[int, LeaderOrder | None]] = {}
        for topic_id, partition_id in state.partition_index.imbalanced_partitions():
            if len(records) >= max_elections:
                return True
            topic = image.topics_by_id.get(topic_id)
            partition = None if topic is None else topic.partitions.get(partition_id)
            if partition is None:
                raise RackwiseError(
                    f"BUG: imbalanced partition {kafka_uuid(topic_id)}-{partition_id} is unknown"
                )
            if topic_id not in min_isrs:
                min_isr = self._topic_settings(image, topic_id)[1]
                min_isrs[topic_id] = (min_isr, self.leader_order(image, topic_id))
            record = build_change(
                partition,
                topic_id,
                leader_acceptor(image, partition),
                election=Election.PREFERRED,
                elr_enabled=self.config.elr_enabled,
                min_isr=min_isrs[topic_id][0],
                leader_order=min_isrs[topic_id][1],
            )
            if record is not None:
                records.append(record)
        return len(records) >= max_elections

    def are_partition_leaders_imbalanced(self, state: ControllerState) -> bool:
        """Whether some partition is not led by its first replica."""
        return bool(state.partition_index.imbalanced)

    def has_leaderships(self, state: ControllerState, broker_id: int) -> bool:
        """Whether the broker leads any partition."""
        topics = state.image.topics_by_id
        return any(
            topics[topic_id].partitions[pid].leader == broker_id
            for topic_id, pid in state.partition_index.isr.get(broker_id, ())
        )
