// MirrorMaker 2's own client reading a cluster's checkpoints: RemoteClusterUtils.translateOffsets, as an
// application moving to that cluster would call it. Prints one tab-separated line per partition:
// "OFFSET <remote cluster alias> <topic> <partition> <offset>".
//
// Arguments: <client properties file> <consumer group> <timeout ms> <remote cluster alias>... The properties file
// holds the client settings of the cluster that holds the checkpoints (bootstrap.servers, security, and
// replication.policy.class / replication.policy.separator when not MM2's defaults); credentials stay out of
// the command line.
import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class Mm2TranslateOffsets {
    public static void main(String[] args) throws Exception {
        Properties properties = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            properties.load(in);
        }
        Map<String, Object> config = new HashMap<>();
        for (String name : properties.stringPropertyNames()) {
            config.put(name, properties.getProperty(name));
        }
        for (int i = 3; i < args.length; i++) {
            Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(
                config, args[i], args[1], Duration.ofMillis(Long.parseLong(args[2])));
            for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
                System.out.println("OFFSET\t" + args[i] + "\t" + entry.getKey().topic() + "\t"
                    + entry.getKey().partition() + "\t" + entry.getValue().offset());
            }
        }
        System.out.flush();
        System.exit(0);
    }
}
