<?php
// SimpleSAMLphp 1.19 (Debian) as the test IdP, served by `php -S` (test/helpers/servers/simplesamlphp.ts).
// IDP_HOME (key, sessions, tmp) and IDP_PORT come from that harness.
$home = getenv('IDP_HOME');
$port = getenv('IDP_PORT');
$config = [
    // Full URL: `php -S -t .../www` serves the web root at /, not at Debian's Apache alias.
    'baseurlpath' => "http://127.0.0.1:$port/",
    'certdir' => "$home/cert/",
    'metadatadir' => __DIR__ . '/../metadata/',
    'tempdir' => "$home/tmp/",
    'datadir' => "$home/tmp/",
    // To php -S's stderr, kept by the harness (no syslog daemon here).
    'logging.handler' => 'stderr',
    'logging.level' => SimpleSAML\Logger::NOTICE,
    // Only shown on error and admin pages.
    'technicalcontact_name' => 'Test',
    'technicalcontact_email' => 'test@example.org',
    'auth.adminpassword' => 'test-only-admin',
    // Not the default: getSecretSalt() throws on the default once a persistent NameID is made.
    'secretsalt' => 'test-only-secretsalt-not-default',
    'timezone' => 'UTC',
    // Both off by default.
    'enable.saml20-idp' => true,
    'module.enable' => ['exampleauth' => true, 'core' => true, 'saml' => true],
    // PHP does not create it; the default is /var/lib/php/sessions.
    'session.phpsession.savepath' => "$home/sessions",
    // Plain http: secure cookies give "Setting secure cookie on plain HTTP is not allowed".
    'session.cookie.secure' => false,
    'session.cookie.samesite' => null,
    'language.cookie.secure' => false,
    'admin.checkforupdates' => false,
];
