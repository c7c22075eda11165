<?php
// The service as the SP: the connection's sp_entity_id and acs_url, from the harness.
$metadata[getenv('SP_ENTITY_ID')] = [
    'AssertionConsumerService' => getenv('SP_ACS_URL'),
    // A stable NameID, the address (else a random transient one).
    'NameIDFormat' => 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    'simplesaml.nameidattribute' => 'email',
    'saml20.sign.response' => true,
    'saml20.sign.assertion' => true,
];
