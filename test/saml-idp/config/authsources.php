<?php
// Static users. IDP_USER_DOMAIN comes from the harness: each test run signs in at its own verified domain.
$domain = getenv('IDP_USER_DOMAIN');
$config = [
    'admin' => ['core:AdminPassword'],
    'example-userpass' => [
        'exampleauth:UserPass',
        'alice:alice-pass' => [
            'uid' => ['alice'],
            'email' => ["alice@$domain"],
            'displayName' => ['Alice Example'],
            // Groups as LDAP-backed IdPs send them; the test maps 'staff' to a role.
            'eduPersonAffiliation' => ['member', 'staff'],
        ],
    ],
];
