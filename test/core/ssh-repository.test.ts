/**
 * The one reader of SSH repository addresses (deploy keys): the forms git users write are read
 * as they mean, and nothing that git or ssh could take as an option, a second host or a path
 * outside the given one gets through.
 */
import { describe, expect, it } from 'vitest';
import { parseSshRepository, sshRepositoryAt } from '../../src/core/ssh-repository.js';

describe('parseSshRepository', () => {
  it.each([
    ['git@github.com:owner/repo.git', { form: 'scp', user: 'git', host: 'github.com', port: 22, path: 'owner/repo.git' }],
    ['deploy@git.example.test:/srv/git/app.git', { form: 'scp', user: 'deploy', host: 'git.example.test', port: 22, path: '/srv/git/app.git' }],
    ['ssh://git@GitLab.Example.test:2222/group/app.git', { form: 'url', user: 'git', host: 'gitlab.example.test', port: 2222, path: '/group/app.git' }],
    ['ssh://git@[2001:db8::1]/x.git', { form: 'url', user: 'git', host: '2001:db8::1', port: 22, path: '/x.git' }],
    ['git@10.0.0.5:~/repo.git', { form: 'scp', user: 'git', host: '10.0.0.5', port: 22, path: '~/repo.git' }],
  ])('%s', (text, want) => {
    expect(parseSshRepository(text)).toEqual(want);
  });

  it.each([
    '-oProxyCommand=sh@host:repo',
    'git@-oProxyCommand=sh:repo',
    'git@host:-repo.git',
    'ssh://git@host/-x',
    'ssh://-oProxyCommand=x@host/repo',
    'git@host:repo;touch x',
    'git@host:repo$(id)',
    "git@host:re'po",
    'git@host:a/../../etc',
    'git@host name:repo',
    'git@ho%73t:repo',
    'git@127.1:repo',
    'git@0x7f.0.0.1:repo',
    'ssh://git@host:0/repo',
    'ssh://git@host:99999/repo',
    'ssh://git@[::1/repo',
    'ssh://git@host',
    'github.com:owner/repo',
    'https://github.com/owner/repo.git',
    'git@host:repo\n-oProxyCommand=x',
    'git@hôst:repo',
  ])('refuses %j', (text) => {
    expect(typeof parseSshRepository(text)).toBe('string');
  });

  it('gives git the checked address in place of the name, the path as written', () => {
    const scp = parseSshRepository('git@github.com:owner/repo.git');
    const url = parseSshRepository('ssh://git@github.com:2222/owner/repo.git');
    if (typeof scp === 'string' || typeof url === 'string') throw new Error('parsed');
    expect(sshRepositoryAt(scp, '140.82.121.3')).toBe('git@140.82.121.3:owner/repo.git');
    expect(sshRepositoryAt(scp, '2001:db8::1')).toBe('git@[2001:db8::1]:owner/repo.git');
    expect(sshRepositoryAt(url, '140.82.121.3')).toBe('ssh://git@140.82.121.3:2222/owner/repo.git');
  });
});
