<?php
// A fixed entityID: the default '__DYNAMIC:1__' would change with the port.
$metadata['urn:test:idp'] = [
    'host' => '__DEFAULT__',
    'privatekey' => 'idp.key',
    'certificate' => 'idp.crt',
    'auth' => 'example-userpass',
];
