// Runs MirrorMaker 2's own configuration checks on properties files, one JVM for many files, and prints one
// tab-separated line per file: "RESULT <file> ACCEPT|REFUSE <enabled flows> <reason>".
//
// It does, with Kafka's classes, what `connect-mirror-maker.sh <file>` does before it reaches a broker:
// - MirrorMaker.main: Utils.loadProps, then new MirrorMakerConfig (its ConfigDef: clusters, REST, providers);
// - the MirrorMaker constructor: clusterPairs(), refused when empty ("No source->target replication flows.");
// - addHerder, per pair: workerConfig (config providers resolved) and new DistributedConfig;
// - MirrorHerder.configureConnectors, per pair and connector class: connectorBaseConfig, resolved by the
//   worker's config providers, checked as Connect's herder does (SourceConnectorConfig: converters,
//   transforms, predicates; then the connector's own validate());
// - the enabled connectors' start: their Mirror*Config, and the client configs they build (AdminClientConfig,
//   ConsumerConfig, ProducerConfig), with sasl.jaas.config parsed as a client parses it (JaasContext) and
//   JKS/PKCS12 stores that exist here opened with their passwords.
// Not done: anything that needs a broker or another machine (cluster id lookup, the config topics, logins,
// connections), and stores or PEM files absent here (paths of the machine the file was written for).
//
// It lives in MM2's package to reach MirrorMakerConfig's package-private transform() and the connector
// configs' client config builders, so it must be compiled (javac) onto the classpath, not run as a source file.
package org.apache.kafka.connect.mirror;

import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.isolation.Plugins;

public class Mm2ConfigCheck {
    private static final List<Class<? extends Connector>> CONNECTORS = List.of(
        MirrorSourceConnector.class, MirrorCheckpointConnector.class, MirrorHeartbeatConnector.class);

    public static void main(String[] args) {
        Plugins plugins = new Plugins(Map.of("plugin.discovery", "service_load"));
        for (String file : args) {
            List<String> flows = new ArrayList<>();
            String verdict = "ACCEPT";
            String reason = "";
            try {
                check(file, plugins, flows);
            } catch (Throwable error) {
                verdict = "REFUSE";
                reason = describe(error);
            }
            System.out.println("RESULT\t" + file + "\t" + verdict + "\t" + String.join(",", flows) + "\t" + reason);
        }
        System.out.flush();
        System.exit(0);
    }

    private static String describe(Throwable error) {
        StringBuilder text = new StringBuilder(error.getClass().getSimpleName() + ": " + error.getMessage());
        for (Throwable cause = error.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            text.append(" <- ").append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage());
        }
        return text.toString().replaceAll("[\\t\\r\\n]+", " ");
    }

    private static void check(String file, Plugins plugins, List<String> flows) throws Exception {
        Map<String, String> props = Utils.propsToStringMap(Utils.loadProps(file));
        // MirrorMakerConfig scans the classpath for plugins (seconds per file) unless told to use only the
        // ServiceLoader manifests Kafka's jars carry; with no plugin.path, the classes found are the same.
        props.putIfAbsent("plugin.discovery", "service_load");
        MirrorMakerConfig config = new MirrorMakerConfig(props);
        List<SourceAndTarget> pairs = config.clusterPairs();
        if (pairs.isEmpty()) {
            throw new IllegalArgumentException("No source->target replication flows.");
        }
        for (SourceAndTarget pair : pairs) {
            new DistributedConfig(config.workerConfig(pair));
        }
        for (SourceAndTarget pair : pairs) {
            for (Class<? extends Connector> connectorClass : CONNECTORS) {
                Map<String, String> connectorProps = config.transform(config.connectorBaseConfig(pair, connectorClass));
                new SourceConnectorConfig(plugins, connectorProps, true);
                Connector connector = connectorClass.getDeclaredConstructor().newInstance();
                Config validated = connector.validate(connectorProps);
                for (ConfigValue value : validated.configValues()) {
                    if (!value.errorMessages().isEmpty()) {
                        throw new IllegalArgumentException(connectorClass.getSimpleName() + " " + pair + ": "
                            + value.name() + ": " + String.join("; ", value.errorMessages()));
                    }
                }
                if (Boolean.parseBoolean(connectorProps.get("enabled"))
                        && connectorClass == MirrorSourceConnector.class) {
                    flows.add(pair.toString());
                }
                startChecks(connectorClass, connectorProps);
            }
        }
    }

    // What each connector's start() parses before it connects, for the flows it runs.
    private static void startChecks(Class<? extends Connector> connectorClass, Map<String, String> props)
            throws Exception {
        List<Map<String, Object>> clients = new ArrayList<>();
        if (connectorClass == MirrorSourceConnector.class) {
            MirrorSourceConfig source = new MirrorSourceConfig(props);
            if (!source.enabled()) {
                return;
            }
            source.replicationPolicy();
            source.topicFilter();
            source.configPropertyFilter();
            clients.add(admin(source.sourceAdminConfig("check")));
            clients.add(admin(source.targetAdminConfig("check")));
            clients.add(consumer(source.sourceConsumerConfig("check")));
            clients.add(producer(source.targetProducerConfig("check")));
        } else if (connectorClass == MirrorCheckpointConnector.class) {
            MirrorCheckpointConfig checkpoint = new MirrorCheckpointConfig(props);
            if (!checkpoint.enabled()) {
                return;
            }
            checkpoint.replicationPolicy();
            clients.add(admin(checkpoint.sourceAdminConfig("check")));
            clients.add(admin(checkpoint.targetAdminConfig("check")));
        } else {
            MirrorHeartbeatConfig heartbeat = new MirrorHeartbeatConfig(props);
            clients.add(admin(heartbeat.targetAdminConfig("check")));
            clients.add(producer(heartbeat.targetProducerConfig("check")));
        }
        for (Map<String, Object> client : clients) {
            security(client);
        }
    }

    private static Map<String, Object> admin(Map<String, Object> props) {
        return new HashMap<>(new AdminClientConfig(props).values());
    }

    private static Map<String, Object> consumer(Map<String, Object> props) {
        Map<String, Object> withDeserializers = new HashMap<>(props);
        withDeserializers.put("key.deserializer", ByteArrayDeserializer.class);
        withDeserializers.put("value.deserializer", ByteArrayDeserializer.class);
        return new HashMap<>(new ConsumerConfig(withDeserializers).values());
    }

    private static Map<String, Object> producer(Map<String, Object> props) {
        Map<String, Object> withSerializers = new HashMap<>(props);
        withSerializers.put("key.serializer", ByteArraySerializer.class);
        withSerializers.put("value.serializer", ByteArraySerializer.class);
        return new HashMap<>(new ProducerConfig(withSerializers).values());
    }

    // As a client's channel builder: the JAAS entry for SASL, the key and trust stores for TLS.
    private static void security(Map<String, Object> values) throws Exception {
        String protocol = String.valueOf(values.get("security.protocol"));
        if (protocol.startsWith("SASL_")) {
            JaasContext.loadClientContext(values);
        }
        if (protocol.endsWith("SSL")) {
            openStore(values, "ssl.keystore");
            openStore(values, "ssl.truststore");
        }
    }

    private static void openStore(Map<String, Object> values, String prefix) throws Exception {
        Object location = values.get(prefix + ".location");
        String type = String.valueOf(values.get(prefix + ".type"));
        if (location == null || type.equals("PEM") || !Files.isRegularFile(Path.of(location.toString()))) {
            return;
        }
        Password password = (Password) values.get(prefix + ".password");
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = new FileInputStream(location.toString())) {
            store.load(in, password == null ? null : password.value().toCharArray());
        }
        if (prefix.equals("ssl.keystore")) {
            Password keyPassword = (Password) values.get("ssl.key.password");
            Password effective = keyPassword != null ? keyPassword : password;
            for (String alias : java.util.Collections.list(store.aliases())) {
                if (store.isKeyEntry(alias)) {
                    store.getKey(alias, effective == null ? null : effective.value().toCharArray());
                }
            }
        }
    }
}
