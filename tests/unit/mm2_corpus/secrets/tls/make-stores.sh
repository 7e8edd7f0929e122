#!/bin/sh
# Regenerates the corpus's TLS stores with the JDK's keytool (run from this folder): a self-signed CA, a client
# key signed by it, in JKS and PKCS12 keystores and truststores. Test-only passwords, valid for 100 years.
set -eu
export STOREPASS=changeit KEYPASS=corpus-key-secret
rm -f ca.p12 ca.pem client.csr client.pem client.keystore.jks client.keystore.p12 truststore.jks truststore.p12
keytool -genkeypair -alias ca -keyalg RSA -keysize 2048 -dname CN=corpus-ca -ext bc:c -validity 36500 \
    -keystore ca.p12 -storetype PKCS12 -storepass:env STOREPASS
keytool -exportcert -rfc -alias ca -keystore ca.p12 -storepass:env STOREPASS > ca.pem
# JKS keystore: the key under its own password (ssl.key.password), the chain signed by the CA.
keytool -genkeypair -alias client -keyalg RSA -keysize 2048 -dname CN=mirror-client -validity 36500 \
    -keystore client.keystore.jks -storetype JKS -storepass:env STOREPASS -keypass:env KEYPASS
keytool -certreq -alias client -keystore client.keystore.jks -storepass:env STOREPASS -keypass:env KEYPASS > client.csr
keytool -gencert -alias ca -keystore ca.p12 -storepass:env STOREPASS -infile client.csr -rfc -validity 36500 > client.pem
keytool -importcert -noprompt -alias ca -file ca.pem -keystore client.keystore.jks -storepass:env STOREPASS
keytool -importcert -noprompt -alias client -file client.pem -keystore client.keystore.jks \
    -storepass:env STOREPASS -keypass:env KEYPASS
# PKCS12 keystore: one password for the store and the key, as PKCS12 keystores have.
keytool -importkeystore -noprompt -srckeystore client.keystore.jks -srcstoretype JKS -srcalias client \
    -srcstorepass:env STOREPASS -srckeypass:env KEYPASS -destkeystore client.keystore.p12 -deststoretype PKCS12 \
    -deststorepass:env STOREPASS -destkeypass:env STOREPASS
keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.jks -storetype JKS -storepass:env STOREPASS
keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 -storepass:env STOREPASS
rm -f ca.p12 client.csr client.pem
