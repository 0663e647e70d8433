package kafka

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/egret-stream/egret/api"
)

// Component config keys. A field of SpoutConfig or SinkConfig left at its
// zero value is read from the key listed beside it (the component's
// setting, else the topology's), so a topology can keep its Kafka settings
// in its config and change them at submit time with --config-property.
const (
	KeyBrokers            = "kafka.brokers"             // comma-separated host:port list (spout and sink)
	KeyTopics             = "kafka.topics"              // comma-separated topics the spout reads
	KeyGroup              = "kafka.group"               // the spout's consumer group
	KeyStartOffset        = "kafka.start.offset"        // earliest or latest
	KeyReadUncommitted    = "kafka.read.uncommitted"    // true: the spout also sees aborted transactional records
	KeyCommitInterval     = "kafka.commit.interval"     // Go duration between the spout's offset commits
	KeyMaxPollRecords     = "kafka.max.poll.records"    // records emitted per NextTuple at most
	KeyTopic              = "kafka.topic"               // the sink's topic
	KeyTransactionalID    = "kafka.transactional.id"    // the 2PC sink's transactional id prefix
	KeyTransactionSlots   = "kafka.transaction.slots"   // transactional ids per 2PC sink task
	KeyTransactionTimeout = "kafka.transaction.timeout" // Go duration: the 2PC sink's transaction timeout
	KeyProduceTimeout     = "kafka.produce.timeout"     // Go duration the sink waits for one produce, flush or commit
	KeyMaxBufferedBytes   = "kafka.max.buffered.bytes"  // bytes the sink's producer buffers at most
)

// Defaults.
const (
	DefaultCommitInterval     = time.Second
	DefaultMaxPollRecords     = 500
	DefaultProduceTimeout     = 30 * time.Second
	DefaultTransactionTimeout = 5 * time.Minute
	DefaultTransactionSlots   = 5
	DefaultMaxBufferedBytes   = 32 << 20
)

func setting(ctx api.Context, key string) string { return strings.TrimSpace(ctx.Config(key)) }

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func durationSetting(ctx api.Context, key string, dst *time.Duration, def time.Duration) error {
	if *dst > 0 {
		return nil
	}
	*dst = def
	if v := setting(ctx, key); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("kafka: %s: %q is not a positive duration", key, v)
		}
		*dst = d
	}
	return nil
}

func intSetting(ctx api.Context, key string, dst *int, def, least int) error {
	if *dst > 0 {
		return nil
	}
	*dst = def
	if v := setting(ctx, key); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			return fmt.Errorf("kafka: %s: %q is not a number ≥ %d", key, v, least)
		}
		*dst = n
	}
	return nil
}

// startOffset parses earliest/latest.
func startOffset(s string) (kgo.Offset, error) {
	switch s {
	case "", "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	return kgo.Offset{}, fmt.Errorf("kafka: %s: %q is neither earliest nor latest", KeyStartOffset, s)
}

func boolSetting(ctx api.Context, key string, dst *bool) error {
	if *dst {
		return nil
	}
	if v := setting(ctx, key); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("kafka: %s: %q is not a boolean", key, v)
		}
		*dst = b
	}
	return nil
}
